package io.sendcap.bench;

import io.sendcap.limit.CapRequest;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.redisson.Redisson;
import org.redisson.api.RRateLimiter;
import org.redisson.api.RateType;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Redisson's {@code RRateLimiter} deciding the benchmark's workload: one limiter per user, one
 * {@code tryAcquire} per send. It holds one rate, so it enforces only the 2-a-day cap; the first
 * send of each user also sets the limiter's rate. The figure is for throughput only.
 */
final class RedissonPeer {
  private RedissonPeer() {}

  /** Decisions per second of Redisson on the Redis at {@code uri}. */
  static double run(String uri, List<CapRequest> work) {
    Config config = new Config();
    config.useSingleServer().setAddress(uri);
    RedissonClient redisson = Redisson.create(config);
    try {
      Set<Long> configured = new HashSet<>();
      long start = System.nanoTime();
      for (CapRequest r : work) {
        RRateLimiter limiter = redisson.getRateLimiter("r{" + r.userId() + "}");
        if (configured.add(r.userId())) {
          limiter.trySetRate(RateType.OVERALL, 2, Duration.ofDays(1));
        }
        limiter.tryAcquire();
      }
      return work.size() * 1e9 / (System.nanoTime() - start);
    } finally {
      redisson.shutdown();
    }
  }
}
