package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.config.CalendarPeriods;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
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
 * random policies (rolling and calendar caps of every algorithm, channel scopes, minimum intervals,
 * time zones) and random sequences of sends (in and out of time order, with duplicates, on and one
 * millisecond before window boundaries, across day, week and month boundaries and a daylight-saving
 * change), split into random batches.
 */
class SlidingLogScriptIT {
  /** Six hours before the end of October 2026 in UTC: month, ISO week and DST boundaries ahead. */
  private static final long T0 = Instant.parse("2026-10-31T18:00:00Z").toEpochMilli();

  /** Between the shortest and the longest generated window, so that both bounds are exercised. */
  private static final Duration RETENTION = Duration.ofMinutes(3);

  private static final long HALF_HOUR = Duration.ofMinutes(30).toMillis();

  private static final List<ZoneId> ZONES =
      List.of(
          ZoneId.of("UTC"),
          ZoneId.of("Europe/Berlin"),
          ZoneId.of("America/New_York"),
          ZoneId.of("Asia/Kolkata"));
  private static final AtomicLong USERS = new AtomicLong(1_000_000);

  private static EmbeddedRedis redis;
  private static RedisConnector connector;

  @BeforeContainer
  static void start() {
    redis = EmbeddedRedis.start();
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", redis.uri());
    p.setProperty("cap.idempotency.retention.ms", String.valueOf(RETENTION.toMillis()));
    p.setProperty("cap.redis.sends-per-call", "4");
    connector = RedisConnector.connect(SendcapConfig.from(p, "test").limiter());
  }

  @AfterContainer
  static void stop() {
    connector.close();
    redis.close();
  }

  record Send(int user, int message, long offsetMs, Channel channel, ZoneId zone) {}

  @Property(tries = 300)
  void theScriptDecidesAsTheModel(
      @ForAll("policies") List<Policy> policies,
      @ForAll("sends") List<Send> sends,
      @ForAll("batchSizes") int batchSize) {
    decideAsTheModel(policies, sends, batchSize);
  }

  /** Every rolling cap of the policies counted by one algorithm: each gets tries of its own. */
  @Property(tries = 400)
  void eachAlgorithmAloneDecidesAsItsModel(
      @ForAll Cap.Algorithm algorithm,
      @ForAll("policies") List<Policy> policies,
      @ForAll("sends") List<Send> sends,
      @ForAll("batchSizes") int batchSize) {
    List<Policy> alone = policies.stream().map(p -> countedBy(p, algorithm)).toList();
    decideAsTheModel(alone, sends, batchSize);
  }

  private static Policy countedBy(Policy p, Cap.Algorithm algorithm) {
    List<Cap> caps =
        p.caps().stream()
            .map(
                c ->
                    c.kind() == Cap.Kind.ROLLING
                        ? new Cap(c.name(), c.kind(), c.window(), c.limit(), c.channel(), algorithm)
                        : c)
            .toList();
    return new Policy(p.segment(), caps, p.minInterval(), p.zone());
  }

  private void decideAsTheModel(List<Policy> policies, List<Send> sends, int batchSize) {
    long base = USERS.getAndAdd(10);
    List<CapRequest> requests = new ArrayList<>();
    for (Send s : sends) {
      Policy policy = policies.get(s.user() % policies.size());
      requests.add(
          new CapRequest(
              base + s.user(),
              "m" + s.message(),
              T0 + s.offsetMs(),
              policy,
              s.channel(),
              s.zone()));
    }
    requests = withTimeFloors(requests, batchSize);
    List<Decision> expected = new SlidingLogModel(RETENTION).decide(requests);
    List<Decision> actual = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (int i = 0; i < requests.size(); i += batchSize) {
        actual.addAll(log.decide(requests.subList(i, Math.min(requests.size(), i + batchSize))));
      }
    }
    assertThat(actual).as("decisions for %s", requests).isEqualTo(expected);
  }

  /**
   * The requests with the time floor sendcap gives a batch: the earliest decision time of the
   * batch's sends and of every send after it, so that nothing a later send counts is evicted.
   */
  static List<CapRequest> withTimeFloors(List<CapRequest> requests, int batchSize) {
    long[] floors = new long[requests.size() + 1];
    floors[requests.size()] = Long.MAX_VALUE;
    for (int i = requests.size() - 1; i >= 0; i--) {
      floors[i] = Math.min(floors[i + 1], requests.get(i).now());
    }
    List<CapRequest> floored = new ArrayList<>();
    for (int i = 0; i < requests.size(); i++) {
      CapRequest r = requests.get(i);
      long floor = floors[i - i % batchSize];
      floored.add(
          new CapRequest(
              r.userId(), r.messageId(), r.now(), r.policy(), r.channel(), r.zone(), floor, false));
    }
    return floored;
  }

  @Provide
  Arbitrary<List<Policy>> policies() {
    Arbitrary<Cap> rolling =
        Combinators.combine(
                Arbitraries.of(1, 2, 5, 10, 60),
                Arbitraries.integers().between(1, 4),
                Arbitraries.of(Cap.Algorithm.class))
            .as(
                (minutes, limit, algorithm) ->
                    new Cap(minutes + "m", Duration.ofMinutes(minutes), limit, algorithm));
    Arbitrary<Cap> calendar =
        Combinators.combine(
                Arbitraries.of(
                    Cap.Kind.CALENDAR_DAY, Cap.Kind.CALENDAR_WEEK, Cap.Kind.CALENDAR_MONTH),
                Arbitraries.integers().between(1, 6))
            .as((kind, limit) -> new Cap(kind.name(), kind, longest(kind), limit, null));
    Arbitrary<Cap> cap =
        Combinators.combine(
                Arbitraries.frequencyOf(
                    net.jqwik.api.Tuple.of(3, rolling), net.jqwik.api.Tuple.of(1, calendar)),
                Arbitraries.of(Channel.class).injectNull(0.6))
            .as(
                (c, channel) ->
                    new Cap(c.name(), c.kind(), c.window(), c.limit(), channel, c.algorithm()));
    Arbitrary<Duration> interval =
        Arbitraries.of(Duration.ZERO, Duration.ofSeconds(30), Duration.ofMinutes(3));
    Arbitrary<Policy> policy =
        Combinators.combine(cap.list().ofMinSize(1).ofMaxSize(3), interval, Arbitraries.of(ZONES))
            .as((caps, gap, zone) -> new Policy("p", caps, gap, zone));
    return policy.list().ofMinSize(1).ofMaxSize(2);
  }

  private static Duration longest(Cap.Kind kind) {
    return switch (kind) {
      case CALENDAR_DAY -> CalendarPeriods.LONGEST_DAY;
      case CALENDAR_WEEK -> CalendarPeriods.LONGEST_WEEK;
      default -> CalendarPeriods.LONGEST_MONTH;
    };
  }

  @Provide
  Arbitrary<List<Send>> sends() {
    Arbitrary<Long> drift = Arbitraries.longs().between(-1_200_000, 2_400_000);
    Arbitrary<ZoneId> zone = Arbitraries.of(ZONES).injectNull(0.5);
    return Combinators.combine(
            Arbitraries.integers().between(0, 2),
            Arbitraries.integers().between(0, 40),
            drift,
            Arbitraries.of(Channel.class),
            zone)
        .as(Send::new)
        .list()
        .ofMaxSize(60)
        .map(SlidingLogScriptIT::mostlyInTimeOrder);
  }

  /**
   * Spreads the sends over time, each a random step from the one before, some backwards; a third of
   * them on a whole half hour, where calendar periods begin and end and so do the buckets of every
   * generated window, and a sixth one millisecond before one.
   */
  private static List<Send> mostlyInTimeOrder(List<Send> raw) {
    List<Send> sends = new ArrayList<>();
    long t = 0;
    for (Send s : raw) {
      t = Math.max(0, t + s.offsetMs() / 2);
      long boundary = t - t % HALF_HOUR;
      long at =
          switch (s.message() % 6) {
            case 0, 3 -> boundary;
            case 1 -> Math.max(0, boundary - 1);
            default -> t;
          };
      sends.add(new Send(s.user(), s.message(), at, s.channel(), s.zone()));
    }
    return sends;
  }

  @Provide
  Arbitrary<Integer> batchSizes() {
    return Arbitraries.of(1, 3, 500);
  }
}
