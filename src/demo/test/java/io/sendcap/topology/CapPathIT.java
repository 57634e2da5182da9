package io.sendcap.topology;

import static io.sendcap.topology.CapPathInputs.HOUR;
import static io.sendcap.topology.CapPathInputs.SKEW;
import static io.sendcap.topology.CapPathInputs.T0;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.RedisConnector;
import io.sendcap.reference.ReferenceCaps;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.streams.TopologyTestDriver;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The property test of sendcap's whole decision path: the real topology under {@code
 * TopologyTestDriver}, the real Lua script on a real {@code redis-server}, and real global quotas,
 * under {@code cap.clock=event}, fed random policies and random, out-of-order sends.
 *
 * <p>Each run pipes its sends (with their batch size, transactional sends, replays, sends outside
 * the allowed skew and wall-clock ticks that flush partial batches), lets every batch be decided,
 * and checks, from the output topics alone:
 *
 * <ul>
 *   <li>[a] every input is decided exactly once: delivered, suppressed or dead-lettered, and
 *       dead-lettered iff its {@code scheduledAt} lies outside {@code cap.max-skew.ms};
 *   <li>[b] no user is above any cap in any true window: for every allowed send at {@code s}, the
 *       allowed sends a rolling cap counts in {@code (s − w, s]}, or a calendar cap in the period
 *       of {@code s}, are at most its limit, and two allowed sends are at least the minimum
 *       interval apart; transactional sends and replays count for nothing;
 *   <li>[r] transactional sends and replays of allowed sends are delivered;
 *   <li>[c] without global caps, every decision equals that of {@link ReferenceCaps} fed the same
 *       sends in input order, field by field;
 *   <li>[d] with global caps, no counter of a global cap holds more allowed sends in its window
 *       than its limit.
 * </ul>
 *
 * <p>{@link CapPathInputs} makes the inputs, each send admissible under the event clock but for
 * those meant to be dead-lettered; {@link Run} pipes one through the driver and collects the
 * outputs; {@link CapInvariants} makes the checks; {@link Shrinker} shrinks a failing input. A
 * failing run prints its input in full ({@link ScenarioListing}) and QuickTheories' seed; {@code
 * -DQT_SEED=...} replays it.
 */
class CapPathIT {
  /** Runs of the property without global caps; {@code -Dcap-path.examples=N} sets another. */
  private static final int EXAMPLES = Integer.getInteger("cap-path.examples", 300);

  private static EmbeddedRedis redis;
  private static RedisConnector connector;
  private static RedisClient adminClient;
  private static StatefulRedisConnection<String, String> admin;

  @BeforeAll
  static void startRedis() {
    redis = EmbeddedRedis.start();
    connector = RedisConnector.connect(config(1, SKEW).limiter());
    adminClient = RedisClient.create(redis.uri());
    admin = adminClient.connect();
  }

  @AfterAll
  static void stopRedis() {
    if (admin != null) {
      admin.close();
      adminClient.shutdown();
    }
    if (connector != null) {
      connector.close();
    }
    if (redis != null) {
      redis.close();
    }
  }

  private static SendcapConfig config(int batchSize, Duration skew) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", "unused:9092");
    p.setProperty("application.id", "cap-path");
    p.setProperty("cap.clock", "event");
    // TopologyTestDriver drops dead-letter records under exactly_once_v2.
    p.setProperty("processing.guarantee", "at_least_once");
    p.setProperty("cap.redis.uri", redis.uri());
    p.setProperty("cap.redis.sends-per-call", "4");
    p.setProperty("cap.max-skew.ms", String.valueOf(skew.toMillis()));
    p.setProperty("batch.max.records", String.valueOf(batchSize));
    p.setProperty("batch.max.wait.ms", "1000");
    return SendcapConfig.from(p, "cap-path");
  }

  // ---------------------------------------------------------------------------------------------
  // The event-clock example of DESIGN.md's eviction rule, then the properties.

  /**
   * Caps of 2 a day and 4 a week; sends scheduled at T, T+1h, T+9d, then T+2h, all produced at
   * T+4.5d. The 1-day window before T+2h holds T and T+1h, and T+9d counts too, being later than
   * T+2h: the fourth is capped with a count of 3, eligible again once T+1h has left a window that
   * still holds T+9d, at T+25h.
   */
  @Test
  void aSendLaterInTimeKeepsTheSendsBeforeItCountedForAnOutOfOrderSend() {
    String yaml =
        """
        segments: []
        default:
          caps:
            - {window: 1d, limit: 2}
            - {window: 7d, limit: 4}
        """;
    long produced = T0.plus(Duration.ofHours(108)).toEpochMilli();
    List<Input> inputs = new ArrayList<>();
    Duration[] at = {Duration.ZERO, Duration.ofHours(1), Duration.ofDays(9), Duration.ofHours(2)};
    for (int i = 0; i < at.length; i++) {
      long scheduledAt = T0.plus(at[i]).toEpochMilli();
      inputs.add(email(i, "m" + i, scheduledAt, produced, -1));
    }
    Scenario example =
        new Scenario(yaml, List.of(new User(101, null, false)), inputs, 1, Duration.ofDays(5));

    Run run = run(example);

    SoftAssertions.assertSoftly(
        soft -> {
          soft.assertThat(run.seen(3))
              .as("the fourth send, at T+2h")
              .isEqualTo(
                  new Seen(
                      "CAP",
                      Policy.DEFAULT,
                      T0.plus(Duration.ofHours(2)),
                      "1d",
                      Duration.ofDays(1).toMillis(),
                      2,
                      3,
                      T0.plus(Duration.ofHours(25)),
                      null));
          soft.assertThat(CapInvariants.problems(example, run)).as("problems of the run").isEmpty();
        });
  }

  /**
   * A global budget of one send a day, taken by a send; the same send replayed later is delivered
   * again, as DESIGN.md says of a send whose message id is already in the log, not refused for want
   * of the token it took the first time.
   */
  @Test
  void aReplayOfAnAllowedSendIsDeliveredWhenItsGlobalCapIsFull() {
    String yaml =
        """
        segments: []
        default:
          caps:
            - {window: 1d, limit: 5}
        global:
          - {name: budget, window: 1d, limit: 1}
        """;
    long at = T0.plus(Duration.ofHours(1)).toEpochMilli();
    List<Input> inputs = List.of(email(0, "m0", at, at, -1), email(1, "m0", at, at + HOUR, 0));
    Scenario replayed = new Scenario(yaml, List.of(new User(101, null, false)), inputs, 1, SKEW);

    Run run = run(replayed);

    assertThat(run.seen(1)).as("the replay").isEqualTo(run.seen(0));
    assertThat(CapInvariants.problems(replayed, run)).as("problems of the run").isEmpty();
  }

  /** An e-mail of campaign c1 to user 101, neither transactional nor outside the skew. */
  private static Input email(int pos, String messageId, long scheduledAt, long recordTs, int of) {
    return new Input(
        pos, 101, messageId, Channel.EMAIL, "c1", scheduledAt, recordTs, false, of, false, 0);
  }

  /** Without global caps: [a], [b], [r], and every decision as the reference model's [c]. */
  @Test
  void everyDecisionIsTheReferenceModelsAndNoCapIsExceeded() {
    qt().withExamples(EXAMPLES)
        .withShrinkCycles(0) // holds() shrinks the inputs itself: QuickTheories shrinks values only
        .forAll(CapPathInputs.scenarios(false))
        .checkAssert(CapPathIT::holds);
  }

  /** With global caps: [a], [b], [r], and no global counter above its limit [d]. */
  @Test
  void globalCapsHoldAndSoDoThePerUserCaps() {
    qt().withExamples(EXAMPLES / 2)
        .withShrinkCycles(0)
        .forAll(CapPathInputs.scenarios(true))
        .checkAssert(CapPathIT::holds);
  }

  /**
   * Runs the scenario and fails if any check does, with its problems and with the smallest input
   * found that still fails the first of them.
   */
  private static void holds(Scenario s) {
    List<String> problems = problems(s);
    if (problems.isEmpty()) {
      return;
    }
    String check = problems.get(0).substring(0, 3);
    Scenario smallest = Shrinker.shrink(s, check, CapPathIT::problems);
    throw new AssertionError(
        "problems of the run:\n"
            + String.join("\n", problems)
            + "\n\nthe smallest input found that still fails "
            + check
            + ":"
            + smallest
            + String.join("\n", problems(smallest))
            + "\n");
  }

  /** The problems of a run of {@code s}. */
  private static List<String> problems(Scenario s) {
    return CapInvariants.problems(s, run(s));
  }

  /** Pipes the scenario through the topology on a clean Redis and collects what comes out. */
  private static Run run(Scenario s) {
    admin.sync().flushall();
    SendcapConfig config = config(s.batchSize(), s.skew());
    Policies policies = Policies.parse(s.yaml(), "scenario");
    LivePolicies live = new LivePolicies(policies, "scenario");
    SegmentRegistry registry = new SegmentRegistry(policies.segmentNames());
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    Undecided undecided = new Undecided(metrics);
    // The instance's clock is never before the records it reads were produced (producers stamp
    // the time they produce): at the newest record's timestamp, no admissible send lies ahead of
    // it by more than the skew, which the validator refuses (the rules of these properties).
    InstantSource clock =
        InstantSource.fixed(
            Instant.ofEpochMilli(
                s.inputs().stream().mapToLong(Scenario.Input::recordTs).max().orElse(0)));
    try (GlobalQuotas quotas =
            new GlobalQuotas(
                connector.openQuotas(),
                config.limiter().keyPrefix(),
                clock,
                config.limiter().globalLease(),
                metrics);
        TopologyTestDriver driver =
            new TopologyTestDriver(
                SendcapTopology.build(
                    config,
                    live,
                    registry,
                    connector::open,
                    quotas,
                    clock,
                    Backpressure.NONE,
                    RegistryOutage.NONE,
                    undecided,
                    metrics),
                SendcapTopology.streamsProperties(config))) {
      return Run.pipe(s, policies, driver, undecided);
    }
  }
}
