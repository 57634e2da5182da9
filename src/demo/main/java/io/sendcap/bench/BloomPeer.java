package io.sendcap.bench;

import com.google.common.hash.BloomFilter;
import com.google.common.hash.Funnels;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/** Guava's Bloom filter, the structure the segment bench compares roaring bitmaps with. */
final class BloomPeer {
  private BloomPeer() {}

  /**
   * The serialized bytes of a Guava {@code BloomFilter<Long>} sized for {@code users} at false
   * positive probability {@code fpp}. Guava allocates the whole bit array at creation, so its size
   * does not depend on what is added.
   */
  static long bytes(long users, double fpp) {
    BloomFilter<Long> filter = BloomFilter.create(Funnels.longFunnel(), users, fpp);
    long[] count = {0};
    try {
      filter.writeTo(
          new OutputStream() {
            @Override
            public void write(int b) {
              count[0]++;
            }

            @Override
            public void write(byte[] b, int off, int len) {
              count[0] += len;
            }
          });
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return count[0];
  }
}
