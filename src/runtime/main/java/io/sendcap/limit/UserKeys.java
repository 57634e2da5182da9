package io.sendcap.limit;

import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;

/**
 * The Redis key of each user's log: {@code PREFIX{USERID}} (one hash tag per user), or, with
 * buckets, {@code PREFIX{TAG}USERID}, where the tag names one of a fixed number of user buckets.
 *
 * <p>A script call may only touch keys of one cluster slot. With one tag per user, nearly every
 * send of a batch lands in its own slot and a call decides one send. With {@code n} buckets, the
 * sends of a batch fall into at most {@code n} slots, so a call decides about {@code batch / n}
 * sends (up to {@code cap.redis.sends-per-call}). A user's bucket depends on the user id and {@code
 * n} only, never on the Kafka partitions, so adding partitions keeps every user's key; changing
 * {@code n} moves users to other keys (see the README's migration notes).
 *
 * <p>Bucket {@code b} of {@code n} gets as its tag the smallest non-negative integer (in decimal)
 * whose cluster slot lies in the middle quarter of {@code [b * 16384 / n, (b + 1) * 16384 / n)}:
 * the buckets' slots are spread evenly over the slot space, and so over the masters of a cluster
 * whose slots are split in equal ranges, as {@code redis-cli --cluster create} splits them.
 */
final class UserKeys {
  /** The most buckets: tags are searched for at start-up, about {@code n²} slot hashes in all. */
  static final int MAX_BUCKETS = 1024;

  private final byte[] prefix;
  private final byte[][] tags;

  /**
   * @param prefix the prefix of every key
   * @param buckets the number of user buckets, or 0 for one hash tag per user
   */
  UserKeys(String prefix, int buckets) {
    if (buckets < 0 || buckets > MAX_BUCKETS) {
      throw new IllegalArgumentException(
          "the number of key buckets must be 0 to " + MAX_BUCKETS + ", not " + buckets);
    }
    this.prefix = (prefix + "{").getBytes(StandardCharsets.US_ASCII);
    this.tags = new byte[buckets][];
    for (int b = 0; b < buckets; b++) {
      tags[b] = tag(b, buckets);
    }
  }

  /** The key of {@code userId}'s log. */
  byte[] key(long userId) {
    byte[] id = Long.toString(userId).getBytes(StandardCharsets.US_ASCII);
    if (tags.length == 0) {
      return concat(prefix, id, new byte[] {'}'}, new byte[0]);
    }
    return concat(prefix, tags[bucket(userId, tags.length)], new byte[] {'}'}, id);
  }

  /**
   * The bucket of {@code userId} among {@code buckets}: the user id mixed by MurmurHash3's 64-bit
   * finalizer, modulo the count. Fixed for good: changing it moves every user to another key.
   */
  static int bucket(long userId, int buckets) {
    long h = userId;
    h ^= h >>> 33;
    h *= 0xff51afd7ed558ccdL;
    h ^= h >>> 33;
    h *= 0xc4ceb9fe1a85ec53L;
    h ^= h >>> 33;
    return (int) Long.remainderUnsigned(h, buckets);
  }

  /** The hash tag of bucket {@code b} of {@code buckets}. */
  static byte[] tag(int b, int buckets) {
    int start = (int) ((long) b * SlotHash.SLOT_COUNT / buckets);
    int end = (int) ((long) (b + 1) * SlotHash.SLOT_COUNT / buckets);
    int quarter = Math.max(1, (end - start) / 8);
    int from = (start + end) / 2 - quarter;
    int to = Math.max(from + 1, (start + end) / 2 + quarter);
    for (long j = 0; ; j++) {
      byte[] tag = Long.toString(j).getBytes(StandardCharsets.US_ASCII);
      int slot = SlotHash.getSlot(tag);
      if (slot >= from && slot < to) {
        return tag;
      }
    }
  }

  private static byte[] concat(byte[] a, byte[] b, byte[] c, byte[] d) {
    byte[] out = new byte[a.length + b.length + c.length + d.length];
    System.arraycopy(a, 0, out, 0, a.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    System.arraycopy(c, 0, out, a.length + b.length, c.length);
    System.arraycopy(d, 0, out, a.length + b.length + c.length, d.length);
    return out;
  }
}
