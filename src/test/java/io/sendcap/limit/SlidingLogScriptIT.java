package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.embedded.EmbeddedRedis;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The Lua script on a real Redis decides exactly as the plain Java model of the same rules, for
 * random policies and random sequences of sends (in and out of time order, with duplicates).
 */
class SlidingLogScriptIT {
  private static final long T0 = 1_790_000_000_000L;

  /** Between the shortest and the longest generated window, so that both bounds are exercised. */
  private static final Duration RETENTION = Duration.ofMinutes(3);

  private static final AtomicLong USERS = new AtomicLong(1_000_000);

  private static EmbeddedRedis redis;
  private static RedisConnector connector;

  @BeforeContainer
  static void start() {
    redis = EmbeddedRedis.start();
    connector = RedisConnector.connect(RedisSlidingLogIT.settings(redis.uri(), RETENTION));
  }

  @AfterContainer
  static void stop() {
    connector.close();
    redis.close();
  }

  record Send(int user, int message, long offsetMs) {}

  @Property(tries = 300)
  void theScriptDecidesAsTheModel(
      @ForAll("policies") Policy policy,
      @ForAll("sends") List<Send> sends,
      @ForAll("batchSizes") int batchSize) {
    long base = USERS.getAndAdd(10);
    List<CapRequest> requests = new ArrayList<>();
    for (Send s : sends) {
      requests.add(new CapRequest(base + s.user(), "m" + s.message(), T0 + s.offsetMs(), policy));
    }
    SlidingLogModel model = new SlidingLogModel(RETENTION);
    List<Decision> expected = model.decide(requests);
    List<Decision> actual = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (int i = 0; i < requests.size(); i += batchSize) {
        actual.addAll(log.decide(requests.subList(i, Math.min(requests.size(), i + batchSize))));
      }
    }
    assertThat(actual).as("decisions for %s", requests).isEqualTo(expected);
  }

  @Provide
  Arbitrary<Policy> policies() {
    Arbitrary<Cap> cap =
        Combinators.combine(Arbitraries.of(1, 2, 5, 10, 60), Arbitraries.integers().between(1, 4))
            .as((minutes, limit) -> new Cap(minutes + "m", Duration.ofMinutes(minutes), limit));
    Arbitrary<Duration> interval =
        Arbitraries.of(Duration.ZERO, Duration.ofSeconds(30), Duration.ofMinutes(3));
    return Combinators.combine(cap.list().ofMinSize(1).ofMaxSize(3), interval)
        .as((caps, gap) -> new Policy("p", caps, gap));
  }

  @Provide
  Arbitrary<List<Send>> sends() {
    Arbitrary<Long> drift = Arbitraries.longs().between(-120_000, 600_000);
    return Combinators.combine(
            Arbitraries.integers().between(0, 2), Arbitraries.integers().between(0, 40), drift)
        .as(Send::new)
        .list()
        .ofMaxSize(60)
        .map(SlidingLogScriptIT::mostlyInTimeOrder);
  }

  /** Spreads the sends over time, each a small random step from the one before, some backwards. */
  private static List<Send> mostlyInTimeOrder(List<Send> raw) {
    List<Send> sends = new ArrayList<>();
    long t = 0;
    for (Send s : raw) {
      t = Math.max(0, t + s.offsetMs() / 4);
      sends.add(new Send(s.user(), s.message(), t));
    }
    return sends;
  }

  @Provide
  Arbitrary<Integer> batchSizes() {
    return Arbitraries.of(1, 3, 500);
  }
}
