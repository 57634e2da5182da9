package io.sendcap.limit;

import static io.sendcap.testing.Generators.ints;
import static io.sendcap.testing.Generators.lists;
import static io.sendcap.testing.Generators.longs;
import static io.sendcap.testing.Generators.nullOr;
import static io.sendcap.testing.Generators.sizes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import io.sendcap.avro.Channel;
import io.sendcap.config.CalendarPeriods;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

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

  /** Steps on and one millisecond inside the generated minimum intervals. */
  private static final long[] GAPS = {30_000, 29_999, 180_000, 179_999};

  private static final List<ZoneId> ZONES =
      List.of(
          ZoneId.of("UTC"),
          ZoneId.of("Europe/Berlin"),
          ZoneId.of("America/New_York"),
          ZoneId.of("Asia/Kolkata"));
  private static final AtomicLong USERS = new AtomicLong(1_000_000);

  private static EmbeddedRedis redis;
  private static RedisConnector connector;

  /**
   * A Redis that keeps a sorted set of more than one member in a skip list, where it keeps one of
   * up to 128 in a listpack by default: ZSCAN hands such a set over out of order, or in parts.
   */
  private static EmbeddedRedis skipLists;

  private static RedisConnector skipListsConnector;

  @BeforeAll
  static void start() {
    redis = EmbeddedRedis.start();
    connector = connect(redis);
    skipLists = EmbeddedRedis.startWith(List.of("--zset-max-listpack-entries", "1"));
    skipListsConnector = connect(skipLists);
  }

  private static RedisConnector connect(EmbeddedRedis server) {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", server.uri());
    p.setProperty("cap.idempotency.retention.ms", String.valueOf(RETENTION.toMillis()));
    p.setProperty("cap.redis.sends-per-call", "4");
    return RedisConnector.connect(SendcapConfig.from(p, "test").limiter());
  }

  @AfterAll
  static void stop() {
    connector.close();
    redis.close();
    skipListsConnector.close();
    skipLists.close();
  }

  record Send(int user, int message, long offsetMs, Channel channel, ZoneId zone) {}

  // Examples to run: QuickTheories counts an input it skips as already tried (its first two, the
  // simplest and the smallest, are often the same) among its examples, hence a tenth more than the
  // tries each property had (300 and 400).

  @Test
  void theScriptDecidesAsTheModel() {
    int tries = 330;
    qt().withExamples(tries)
        .forAll(policies(tries), sends(tries), batchSizes())
        .checkAssert((policies, sends, batchSize) -> decideAsTheModel(policies, sends, batchSize));
  }

  /** The same where the script cannot read a user's sorted set in one ZSCAN, in order. */
  @Test
  void theScriptDecidesAsTheModelOnSortedSetsInSkipLists() {
    int tries = 330;
    qt().withExamples(tries)
        .forAll(policies(tries), sends(tries), batchSizes())
        .checkAssert(
            (policies, sends, batchSize) ->
                decideAsTheModel(skipListsConnector, policies, sends, batchSize));
  }

  /** Every rolling cap of the policies counted by one algorithm: each gets tries of its own. */
  @Test
  void eachAlgorithmAloneDecidesAsItsModel() {
    int tries = 440;
    qt().withExamples(tries)
        .forAll(
            Generate.enumValues(Cap.Algorithm.class), policies(tries), sends(tries), batchSizes())
        .checkAssert(
            (algorithm, policies, sends, batchSize) -> {
              List<Policy> alone = policies.stream().map(p -> countedBy(p, algorithm)).toList();
              decideAsTheModel(alone, sends, batchSize);
            });
  }

  /**
   * A log longer than a listpack holds (128 entries by default): Redis moves the user's sorted set
   * to a skip list, which ZSCAN hands over in parts, so the script reads it again with ZRANGE.
   */
  @Test
  void aLogTooLongForOneScanDecidesAsTheModel() throws IOException {
    Policy policy =
        new Policy(
            "p",
            List.of(
                new Cap("1h", Duration.ofHours(1), 250), new Cap("1m", Duration.ofMinutes(1), 40)),
            Duration.ZERO);
    long user = USERS.getAndAdd(1);
    List<CapRequest> requests = new ArrayList<>();
    for (int i = 0; i < 600; i++) {
      requests.add(new CapRequest(user, "m" + (i % 500), T0 + i * 1_000L, policy));
    }
    requests = withTimeFloors(requests, 7);
    List<Decision> actual = decideInBatches(connector, requests, 7);
    assertThat(redis.call("OBJECT", "ENCODING", "s{" + user + "}")).contains("skiplist");
    assertThat(actual).isEqualTo(new SlidingLogModel(RETENTION).decide(requests));
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
    decideAsTheModel(connector, policies, sends, batchSize);
  }

  private void decideAsTheModel(
      RedisConnector connector, List<Policy> policies, List<Send> sends, int batchSize) {
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
    List<Decision> actual = decideInBatches(connector, requests, batchSize);
    assertThat(actual).as("decisions for %s", requests).isEqualTo(expected);
  }

  /** The script's decisions for {@code requests}, sent in batches of {@code batchSize}. */
  private static List<Decision> decideInBatches(
      RedisConnector connector, List<CapRequest> requests, int batchSize) {
    List<Decision> actual = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (int i = 0; i < requests.size(); i += batchSize) {
        actual.addAll(log.decide(requests.subList(i, Math.min(requests.size(), i + batchSize))));
      }
    }
    return actual;
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

  private static Gen<List<Policy>> policies(int tries) {
    Gen<Cap> rolling =
        Generate.pick(List.of(1, 2, 5, 10, 60))
            .zip(
                ints(1, 4),
                Generate.enumValues(Cap.Algorithm.class),
                (minutes, limit, algorithm) ->
                    new Cap(minutes + "m", Duration.ofMinutes(minutes), limit, algorithm));
    Gen<Cap> calendar =
        Generate.pick(
                List.of(Cap.Kind.CALENDAR_DAY, Cap.Kind.CALENDAR_WEEK, Cap.Kind.CALENDAR_MONTH))
            .zip(
                ints(1, 6),
                (kind, limit) -> new Cap(kind.name(), kind, longest(kind), limit, null));
    // Rolling three times in four, else calendar: both drawn and one kept, so that the draws keep
    // their places.
    Gen<Cap> cap =
        Generate.range(0, 3)
            .zip(rolling, calendar, (i, r, c) -> i < 3 ? r : c)
            .zip(
                nullOr(60, Generate.enumValues(Channel.class)),
                (c, channel) ->
                    new Cap(c.name(), c.kind(), c.window(), c.limit(), channel, c.algorithm()));
    Gen<Duration> interval =
        Generate.pick(List.of(Duration.ZERO, Duration.ofSeconds(30), Duration.ofMinutes(3)));
    Gen<Policy> policy =
        lists(cap, sizes(1, 3, tries), 1)
            .zip(
                interval,
                Generate.pick(ZONES),
                (caps, gap, zone) -> new Policy("p", caps, gap, zone));
    return lists(policy, sizes(1, 2, tries), 1);
  }

  private static Duration longest(Cap.Kind kind) {
    return switch (kind) {
      case CALENDAR_DAY -> CalendarPeriods.LONGEST_DAY;
      case CALENDAR_WEEK -> CalendarPeriods.LONGEST_WEEK;
      default -> CalendarPeriods.LONGEST_MONTH;
    };
  }

  private static Gen<List<Send>> sends(int tries) {
    Gen<Long> drift = longs(-1_200_000, 2_400_000);
    Gen<ZoneId> zone = nullOr(50, Generate.pick(ZONES));
    Gen<Send> send =
        ints(0, 2).zip(ints(0, 40), drift, Generate.enumValues(Channel.class), zone, Send::new);
    return lists(send, sizes(0, 60, tries), 0).map(SlidingLogScriptIT::mostlyInTimeOrder);
  }

  /**
   * Spreads the sends over time, each a random step from the one before, some backwards; a third of
   * them on a whole half hour, where calendar periods begin and end and so do the buckets of every
   * generated window, a sixth one millisecond before one, and a sixth a minimum interval (30 s, 3
   * min) or one millisecond less after the send before it.
   */
  private static List<Send> mostlyInTimeOrder(List<Send> raw) {
    List<Send> sends = new ArrayList<>();
    long t = 0;
    long last = 0;
    for (Send s : raw) {
      t = Math.max(0, t + s.offsetMs() / 2);
      long boundary = t - t % HALF_HOUR;
      long at =
          switch (s.message() % 6) {
            case 0, 3 -> boundary;
            case 1 -> Math.max(0, boundary - 1);
            case 4 -> last + GAPS[s.message() / 6 % GAPS.length];
            default -> t;
          };
      last = at;
      sends.add(new Send(s.user(), s.message(), at, s.channel(), s.zone()));
    }
    return sends;
  }

  private static Gen<Integer> batchSizes() {
    return Generate.pick(List.of(1, 3, 500));
  }
}
