package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScoredValue;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.sendcap.avro.Channel;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.embedded.EmbeddedRedis;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Each algorithm on a real Redis at the window boundaries where they part ways, with the decisions
 * worked out by hand and checked against the model too.
 */
class CapAlgorithmsIT {
  /** A whole hour, so a bucket boundary of every window here: 2026-09-21T12:00Z. */
  private static final long B = Instant.parse("2026-09-21T12:00:00Z").toEpochMilli();

  private static final long MINUTE = 60_000;
  private static final long HOUR = 3_600_000;
  private static final Duration RETENTION = Duration.ofMinutes(10);

  private static EmbeddedRedis redis;
  private static RedisConnector connector;
  private static RedisClient admin;
  private static StatefulRedisConnection<String, String> adminConnection;
  private static long nextUser = 1;

  @BeforeAll
  static void start() {
    redis = EmbeddedRedis.start();
    connector = RedisConnector.connect(RedisSlidingLogIT.settings(redis.uri(), RETENTION));
    admin = RedisClient.create(redis.uri());
    adminConnection = admin.connect();
  }

  @AfterAll
  static void stop() {
    adminConnection.close();
    admin.shutdown();
    connector.close();
    redis.close();
  }

  private static RedisCommands<String, String> redisCli() {
    return adminConnection.sync();
  }

  private static Policy policy(Cap... caps) {
    return new Policy("p", List.of(caps), Duration.ZERO);
  }

  /** Decides the sends on Redis, each batch in turn, and checks the model decides the same. */
  private static List<Decision> decide(List<CapRequest> sends) {
    List<Decision> decisions = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (CapRequest send : sends) {
        decisions.addAll(log.decide(List.of(send)));
      }
    }
    assertThat(decisions).isEqualTo(new SlidingLogModel(RETENTION).decide(sends));
    return decisions;
  }

  private static Decision allowed(long at) {
    return new Decision(Decision.Outcome.ALLOWED, -1, 0, at);
  }

  private static Decision capped(int cap, int count, long next) {
    return new Decision(Decision.Outcome.CAPPED, cap, count, next);
  }

  @Test
  void aFixedWindowTakesItsLimitOnEachSideOfABoundary() {
    long u = nextUser++;
    Policy p = policy(new Cap("1h", Duration.ofHours(1), 2, Cap.Algorithm.FIXED_WINDOW));
    List<Decision> d =
        decide(
            List.of(
                new CapRequest(u, "a", B - 1, p),
                new CapRequest(u, "b", B - 1, p),
                new CapRequest(u, "c", B - 1, p),
                new CapRequest(u, "d", B, p),
                new CapRequest(u, "e", B, p),
                new CapRequest(u, "f", B + 1, p)));
    assertThat(d)
        .as("four sends in two milliseconds under 2 an hour")
        .containsExactly(
            allowed(B - 1),
            allowed(B - 1),
            capped(0, 2, B),
            allowed(B),
            allowed(B),
            capped(0, 2, B + HOUR));
  }

  @Test
  void aSlidingWindowWeighsThePreviousBucketByWhatTheWindowStillCoversOfIt() {
    long u = nextUser++;
    Policy p = policy(new Cap("1m", Duration.ofMinutes(1), 4, Cap.Algorithm.SLIDING_WINDOW));
    long half = B + 30_000;
    List<CapRequest> sends = new ArrayList<>();
    for (String id : List.of("a", "b", "c", "d", "e")) {
      sends.add(new CapRequest(u, id, B - 1, p));
    }
    sends.add(new CapRequest(u, "f", B, p));
    sends.add(new CapRequest(u, "g", half, p));
    sends.add(new CapRequest(u, "h", half, p));
    sends.add(new CapRequest(u, "i", half, p));
    sends.add(new CapRequest(u, "j", half + 1, p));
    List<Decision> d = decide(sends);
    assertThat(d.subList(0, 4)).containsOnly(allowed(B - 1));
    assertThat(d.get(4))
        .as("4 in this bucket: the next bucket must start and its first ms pass")
        .isEqualTo(capped(0, 4, B + 1));
    assertThat(d.get(5))
        .as("at B the previous bucket weighs in whole")
        .isEqualTo(capped(0, 4, B + 1));
    assertThat(d.subList(6, 8))
        .as("half way, the previous 4 weigh 2: room for 2")
        .containsOnly(allowed(half));
    assertThat(d.get(8))
        .as("4 × 30,000 + 2 × 60,000 reaches 4 × 60,000; one ms later it is 239,996")
        .isEqualTo(capped(0, 4, half + 1));
    assertThat(d.get(9)).isEqualTo(allowed(half + 1));
  }

  @Test
  void aTokenBucketTakesABurstOfItsLimitThenOneSendPerInterval() {
    long u = nextUser++;
    Policy p = policy(new Cap("1m", Duration.ofMinutes(1), 3, Cap.Algorithm.TOKEN_BUCKET));
    long interval = 20_000;
    List<Decision> d =
        decide(
            List.of(
                new CapRequest(u, "a", B, p),
                new CapRequest(u, "b", B, p),
                new CapRequest(u, "c", B, p),
                new CapRequest(u, "d", B, p),
                new CapRequest(u, "e", B + interval - 1, p),
                new CapRequest(u, "f", B + interval, p),
                new CapRequest(u, "g", B + interval, p)));
    assertThat(d)
        .containsExactly(
            allowed(B),
            allowed(B),
            allowed(B),
            capped(0, 3, B + interval),
            capped(0, 3, B + interval),
            allowed(B + interval),
            capped(0, 3, B + 2 * interval));
  }

  @Test
  void aTokenBucketOfOneDecidesAsASlidingLogOfOne() {
    long logUser = nextUser++;
    long bucketUser = nextUser++;
    Policy log = policy(new Cap("1h", Duration.ofHours(1), 1));
    Policy bucket = policy(new Cap("1h", Duration.ofHours(1), 1, Cap.Algorithm.TOKEN_BUCKET));
    List<CapRequest> logSends = new ArrayList<>();
    List<CapRequest> bucketSends = new ArrayList<>();
    long[] offsets = {0, 1, HOUR - 1, HOUR, HOUR + 1, 2 * HOUR + 5, 3 * HOUR + 4, 3 * HOUR + 5};
    for (int i = 0; i < offsets.length; i++) {
      logSends.add(new CapRequest(logUser, "m" + i, B + offsets[i], log));
      bucketSends.add(new CapRequest(bucketUser, "m" + i, B + offsets[i], bucket));
    }
    assertThat(decide(bucketSends)).isEqualTo(decide(logSends));
  }

  @Test
  void aReplayCountsOnceWithEveryAlgorithm() {
    for (Cap.Algorithm algorithm : Cap.Algorithm.values()) {
      long u = nextUser++;
      Policy p = policy(new Cap("1h", Duration.ofHours(1), 2, algorithm));
      List<Decision> d =
          decide(
              List.of(
                  new CapRequest(u, "a", B, p),
                  new CapRequest(u, "a", B + 1, p),
                  new CapRequest(u, "b", B + 2, p),
                  new CapRequest(u, "a", B + 3, p),
                  new CapRequest(u, "c", B + 4, p)));
      assertThat(d)
          .extracting(Decision::outcome)
          .as(algorithm.key())
          .containsExactly(
              Decision.Outcome.ALLOWED,
              Decision.Outcome.DUPLICATE,
              Decision.Outcome.ALLOWED,
              Decision.Outcome.DUPLICATE,
              Decision.Outcome.CAPPED);
      assertThat(d.get(4).count()).as(algorithm.key()).isEqualTo(2);
    }
  }

  @Test
  void aCounterRecognisesAReplayForTheRetentionOnlyWhereASlidingLogKeepsItsWindow() {
    long counted = nextUser++;
    long logged = nextUser++;
    Policy fixed = policy(new Cap("1d", Duration.ofDays(1), 5, Cap.Algorithm.FIXED_WINDOW));
    Policy log = policy(new Cap("1d", Duration.ofDays(1), 5));
    long late = B + RETENTION.toMillis() + MINUTE;
    List<Decision> d =
        decide(
            List.of(
                new CapRequest(counted, "a", B, fixed),
                new CapRequest(counted, "b", late, fixed),
                new CapRequest(counted, "a", late + 1, fixed),
                new CapRequest(logged, "a", B, log),
                new CapRequest(logged, "b", late, log),
                new CapRequest(logged, "a", late + 1, log)));
    assertThat(d.get(2).outcome())
        .as("a's id left with the retention when b was logged: a counts again")
        .isEqualTo(Decision.Outcome.ALLOWED);
    assertThat(d.get(5).outcome()).isEqualTo(Decision.Outcome.DUPLICATE);
    assertThat(redisCli().zcard("s{" + counted + "}")).as("2 ids and the counter").isEqualTo(3);
    assertThat(redisCli().zcard("s{" + logged + "}")).isEqualTo(2);
  }

  @Test
  void aSendIsAllowedOnlyIfEveryCapOfEveryAlgorithmHoldsAndASuppressedOneConsumesNothing() {
    long u = nextUser++;
    Policy p =
        new Policy(
            "p",
            List.of(
                new Cap("1h", Duration.ofHours(1), 3),
                new Cap(
                    "1h",
                    Cap.Kind.ROLLING,
                    Duration.ofHours(1),
                    2,
                    Channel.SMS,
                    Cap.Algorithm.FIXED_WINDOW),
                new Cap("1d", Duration.ofDays(1), 4, Cap.Algorithm.TOKEN_BUCKET),
                new Cap("10m", Duration.ofMinutes(10), 2, Cap.Algorithm.SLIDING_WINDOW)),
            Duration.ZERO);
    long tenMinutes = 10 * MINUTE;
    List<CapRequest> sends =
        List.of(
            new CapRequest(u, "e1", B, p, Channel.EMAIL, null),
            new CapRequest(u, "s1", B + 1, p, Channel.SMS, null),
            new CapRequest(u, "s2", B + 2, p, Channel.SMS, null),
            new CapRequest(u, "s3", B + tenMinutes + 1, p, Channel.SMS, null),
            new CapRequest(u, "s4", B + tenMinutes + 2, p, Channel.SMS, null),
            new CapRequest(u, "e2", B + HOUR, p, Channel.EMAIL, null));
    String key = "s{" + u + "}";
    List<Decision> d = new ArrayList<>();
    List<ScoredValue<String>> beforeS4 = List.of();
    List<ScoredValue<String>> afterS4 = List.of();
    try (RedisSlidingLog log = connector.open()) {
      for (CapRequest send : sends) {
        boolean s4 = send.messageId().equals("s4");
        if (s4) {
          beforeS4 = redisCli().zrangeWithScores(key, 0, -1);
        }
        d.addAll(log.decide(List.of(send)));
        if (s4) {
          afterS4 = redisCli().zrangeWithScores(key, 0, -1);
        }
      }
    }
    assertThat(d).isEqualTo(new SlidingLogModel(RETENTION).decide(sends));
    assertThat(d.get(2))
        .as("the sliding window of 2 per 10 minutes holds e1 and s1")
        .isEqualTo(capped(3, 2, B + tenMinutes + 1));
    assertThat(d.get(3)).isEqualTo(allowed(B + tenMinutes + 1));
    assertThat(d.get(4))
        .as("the first failing cap, and the latest time any failing cap lets go")
        .isEqualTo(capped(0, 3, B + HOUR));
    assertThat(afterS4).as("the suppressed s4 changed nothing").isEqualTo(beforeS4);
    assertThat(d.get(5)).isEqualTo(allowed(B + HOUR));
  }

  @Test
  void countersFollowAUserIntoAnotherPolicyWithTheSameAlgorithmWindowAndChannel() {
    long u = nextUser++;
    Policy two = policy(new Cap("1d", Duration.ofDays(1), 2, Cap.Algorithm.FIXED_WINDOW));
    Policy three = policy(new Cap("1d", Duration.ofDays(1), 3, Cap.Algorithm.FIXED_WINDOW));
    List<Decision> d =
        decide(
            List.of(
                new CapRequest(u, "a", B, two),
                new CapRequest(u, "b", B, two),
                new CapRequest(u, "c", B, three),
                new CapRequest(u, "d", B, three)));
    assertThat(d)
        .extracting(Decision::outcome)
        .containsExactly(
            Decision.Outcome.ALLOWED,
            Decision.Outcome.ALLOWED,
            Decision.Outcome.ALLOWED,
            Decision.Outcome.CAPPED);
  }

  @Test
  void theUsersSetHoldsTheIdsAndTheCountersAndExpiresWhenTheLastStateNoLongerMatters() {
    long u = nextUser++;
    Policy p = policy(new Cap("1h", Duration.ofHours(1), 5, Cap.Algorithm.SLIDING_WINDOW));
    decide(
        List.of(new CapRequest(u, "a", B + MINUTE, p), new CapRequest(u, "b", B + 2 * MINUTE, p)));
    String key = "s{" + u + "}";
    List<ScoredValue<String>> set = redisCli().zrangeWithScores(key, 0, -1);
    assertThat(set.subList(0, 2))
        .as(
            "counters first, their values negated: the bucket's start plus its count of 2, and"
                + " the previous bucket's count")
        .extracting(
            v -> (int) v.getValue().charAt(0),
            v -> v.getValue().substring(1),
            ScoredValue::getScore)
        .containsExactly(tuple(2, "3600000", (double) -(B + 2)), tuple(3, "3600000", 0.0));
    assertThat(set.subList(2, 4))
        .extracting(ScoredValue::getScore)
        .containsExactly((double) (B + MINUTE), (double) (B + 2 * MINUTE));
    assertThat(redisCli().pttl(key))
        .as("two windows: the bucket and the next it weighs on")
        .isBetween(2 * HOUR - MINUTE, 2 * HOUR);
  }
}
