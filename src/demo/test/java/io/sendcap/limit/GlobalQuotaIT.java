package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRedisCluster;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Queue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Many threads of two instances take tokens of one hot global counter on a real Redis, as the
 * stream threads of a blast's instances would.
 */
class GlobalQuotaIT {
  private static final int THREADS_PER_INSTANCE = 8;

  /** A Redis call: who made it, when it began, what it asked and what it got. */
  private record Call(long thread, long start, long want, long granted) {}

  /** A request that got fewer tokens than it asked for: who made it and when it began. */
  private record Refusal(long thread, long start) {}

  /** The store of one instance, recording its reservations. */
  private static final class Recording implements QuotaStore {
    final QuotaStore redis;
    final Queue<Call> calls;

    Recording(QuotaStore redis, Queue<Call> calls) {
      this.redis = redis;
      this.calls = calls;
    }

    @Override
    public long reserve(String key, long want, long limit, long ttlMillis, Deadline deadline) {
      long start = System.nanoTime();
      long granted = redis.reserve(key, want, limit, ttlMillis, deadline);
      calls.add(new Call(Thread.currentThread().getId(), start, want, granted));
      return granted;
    }

    @Override
    public CompletionStage<Void> release(String key, long tokens) {
      return redis.release(key, tokens);
    }

    @Override
    public void close() {
      redis.close();
    }
  }

  private static SendcapConfig.Limiter settings(String uris, boolean cluster) {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", uris);
    p.setProperty("cap.redis.cluster", String.valueOf(cluster));
    return SendcapConfig.from(p, "test").limiter();
  }

  @Test
  void twoInstancesNeverExceedTheLimitAndRefuseOnlyWhenNoTokenIsLeftUnreserved() throws Exception {
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      long limit = 30_000;
      Result r = blast(settings(redis.uri(), false), limit, 30);

      RedisClient client = RedisClient.create(redis.uri());
      try (StatefulRedisConnection<String, String> c = client.connect()) {
        assertThat(c.sync().get(r.redisKey())).isEqualTo(String.valueOf(limit));
      } finally {
        client.shutdown();
      }
      assertThat(r.granted()).isEqualTo(limit);
      assertEveryRefusalFollowsAShortAnswer(r);
      double callsPerToken = (double) r.calls().size() / limit;
      System.out.printf(
          "global quota: %d tokens to %d threads of 2 instances in %d Redis calls (%.2f%%)%n",
          limit, 2 * THREADS_PER_INSTANCE, r.calls().size(), 100 * callsPerToken);
      assertThat(callsPerToken).as("Redis calls per token").isLessThan(0.1);
    }
  }

  @Test
  void onRedisClusterTheHotCounterLivesInOneSlotAndHoldsItsLimit() throws Exception {
    try (EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start(3)) {
      long limit = 5_000;
      Result r = blast(settings(String.join(",", cluster.uris()), true), limit, 5);

      assertThat(r.granted()).isEqualTo(limit);
      assertEveryRefusalFollowsAShortAnswer(r);
    }
  }

  private record Result(long granted, List<Call> calls, List<Refusal> refusals, String redisKey) {}

  /**
   * Threads of two instances take 1 to 3 tokens at a time until a request gets fewer than it asked
   * for.
   */
  private static Result blast(SendcapConfig.Limiter settings, long limit, int maxBatch)
      throws Exception {
    GlobalQuotas.Key key = GlobalQuotas.Key.of("hot", "all", System.currentTimeMillis(), 3_600_000);
    Queue<Call> calls = new ConcurrentLinkedQueue<>();
    Queue<Refusal> refusals = new ConcurrentLinkedQueue<>();
    List<RedisConnector> connectors = new ArrayList<>();
    List<GlobalQuotas> instances = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      RedisConnector connector = RedisConnector.connect(settings);
      connectors.add(connector);
      instances.add(
          new GlobalQuotas(
              new Recording(connector.openQuotas(), calls),
              "it",
              InstantSource.system(),
              Duration.ofMinutes(5),
              new SimpleMeterRegistry()));
    }
    ExecutorService threads = Executors.newFixedThreadPool(2 * THREADS_PER_INSTANCE);
    CountDownLatch go = new CountDownLatch(1);
    List<Future<Long>> taken = new ArrayList<>();
    for (int t = 0; t < 2 * THREADS_PER_INSTANCE; t++) {
      GlobalQuotas instance = instances.get(t % 2);
      int want = 1 + t % 3;
      taken.add(
          threads.submit(
              () -> {
                go.await();
                long sum = 0;
                while (true) {
                  long start = System.nanoTime();
                  long got = instance.acquire(key, limit, maxBatch, want);
                  sum += got;
                  if (got < want) {
                    refusals.add(new Refusal(Thread.currentThread().getId(), start));
                    return sum;
                  }
                }
              }));
    }
    go.countDown();
    long granted = 0;
    for (Future<Long> f : taken) {
      granted += f.get();
    }
    threads.shutdown();
    for (RedisConnector c : connectors) {
      c.close();
    }
    return new Result(
        granted, List.copyOf(calls), List.copyOf(refusals), "itg{hot:all}:" + key.windowStart());
  }

  /**
   * A request was refused only on the word of a Redis call that the refused thread made after its
   * request began and that got fewer tokens than it asked for: all were reserved by then.
   */
  private static void assertEveryRefusalFollowsAShortAnswer(Result r) {
    assertThat(r.refusals()).hasSize(2 * THREADS_PER_INSTANCE);
    for (Refusal refusal : r.refusals()) {
      assertThat(r.calls())
          .as("a short answer to thread %d after its refused request began", refusal.thread())
          .anyMatch(
              c ->
                  c.thread() == refusal.thread()
                      && c.start() >= refusal.start()
                      && c.granted() < c.want());
    }
  }
}
