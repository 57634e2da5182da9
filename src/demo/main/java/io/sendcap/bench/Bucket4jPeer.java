package io.sendcap.bench;

import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.sendcap.limit.CapRequest;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;

/**
 * Bucket4j's Redis integration (Lettuce, compare-and-swap) deciding the benchmark's workload: one
 * token bucket per user with the two caps as bandwidths, one {@code tryConsume} (one round trip or
 * more) per send. Token buckets refill greedily, so they approximate the sliding caps rather than
 * enforce them exactly; the figure is for throughput only.
 */
final class Bucket4jPeer {
  private Bucket4jPeer() {}

  /** Decisions per second of Bucket4j on the Redis at {@code uri}. */
  static double run(String uri, List<CapRequest> work) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<byte[], byte[]> connection =
        client.connect(ByteArrayCodec.INSTANCE)) {
      ProxyManager<byte[]> buckets =
          Bucket4jLettuce.casBasedBuilder(connection)
              .expirationAfterWrite(
                  ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(
                      Duration.ofDays(7)))
              .build();
      BucketConfiguration caps =
          BucketConfiguration.builder()
              .addLimit(limit -> limit.capacity(2).refillGreedy(2, Duration.ofDays(1)))
              .addLimit(limit -> limit.capacity(5).refillGreedy(5, Duration.ofDays(7)))
              .build();
      Supplier<BucketConfiguration> configuration = () -> caps;
      long start = System.nanoTime();
      for (CapRequest r : work) {
        byte[] key = ("b{" + r.userId() + "}").getBytes(StandardCharsets.US_ASCII);
        buckets.getProxy(key, configuration).tryConsume(1);
      }
      return work.size() * 1e9 / (System.nanoTime() - start);
    } finally {
      client.shutdown();
    }
  }
}
