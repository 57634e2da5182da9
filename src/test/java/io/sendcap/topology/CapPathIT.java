package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.arbitrary;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.Cap;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.RedisConnector;
import io.sendcap.reference.ReferenceCaps;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.ZoneId;
import java.time.temporal.IsoFields;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.BiConsumer;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;

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
 * <p>Generated sends are admissible under the event clock: {@code |scheduledAt − record timestamp|
 * <= cap.max-skew.ms} and {@code scheduledAt >= stream time − cap.max-skew.ms}, where the stream
 * time is the largest record timestamp so far, this record's included. A failing run prints its
 * input in full and QuickTheories' seed; {@code -DQT_SEED=...} replays it.
 */
class CapPathIT {
  /** A Saturday: Berlin leaves summer time the next day, New York a week later; a month ends. */
  private static final Instant T0 = Instant.parse("2026-10-24T00:00:00Z");

  private static final Duration SKEW = Duration.ofDays(2);
  private static final long MINUTE = 60_000;
  private static final long HOUR = 60 * MINUTE;

  /** Runs of the property without global caps; {@code -Dcap-path.examples=N} sets another. */
  private static final int EXAMPLES = Integer.getInteger("cap-path.examples", 300);

  /** Runs a failing input's shrinking may take. */
  private static final int SHRINK_RUNS = 400;

  private static final List<String> WINDOWS =
      List.of(
          "1d",
          "1h",
          "15m",
          "4h",
          "12h",
          "2d",
          "3d",
          "7d",
          "calendar-day",
          "calendar-week",
          "calendar-month");
  private static final List<String> INTERVALS = List.of("", "", "", "30m", "2h", "1d");
  private static final List<ZoneId> ZONES =
      List.of(
          ZoneId.of("UTC"),
          ZoneId.of("Europe/Berlin"),
          ZoneId.of("America/New_York"),
          ZoneId.of("Asia/Kolkata"));
  private static final List<String> GLOBAL_WINDOWS = List.of("1h", "6h", "1d");
  private static final String SEGMENT = "vip";

  private static final SingleObjectAvroSerde<ScheduledSend> SENDS =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private static final SingleObjectAvroSerde<Delivery> DELIVERIES =
      new SingleObjectAvroSerde<>(Delivery.class);
  private static final SingleObjectAvroSerde<Suppression> SUPPRESSIONS =
      new SingleObjectAvroSerde<>(Suppression.class);

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
      inputs.add(
          new Input(
              i,
              101,
              "m" + i,
              Channel.EMAIL,
              "c1",
              T0.plus(at[i]).toEpochMilli(),
              produced,
              false,
              -1,
              false,
              0));
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
          soft.assertThat(problems(example, run)).as("problems of the run").isEmpty();
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
    List<Input> inputs =
        List.of(
            new Input(0, 101, "m0", Channel.EMAIL, "c1", at, at, false, -1, false, 0),
            new Input(1, 101, "m0", Channel.EMAIL, "c1", at, at + HOUR, false, 0, false, 0));
    Scenario replayed = new Scenario(yaml, List.of(new User(101, null, false)), inputs, 1, SKEW);

    Run run = run(replayed);

    assertThat(run.seen(1)).as("the replay").isEqualTo(run.seen(0));
    assertThat(problems(replayed, run)).as("problems of the run").isEmpty();
  }

  /** Without global caps: [a], [b], [r], and every decision as the reference model's [c]. */
  @Test
  void everyDecisionIsTheReferenceModelsAndNoCapIsExceeded() {
    qt().withExamples(EXAMPLES)
        .withShrinkCycles(0) // holds() shrinks the inputs itself: QuickTheories shrinks values only
        .forAll(scenarios(false))
        .checkAssert(CapPathIT::holds);
  }

  /** With global caps: [a], [b], [r], and no global counter above its limit [d]. */
  @Test
  void globalCapsHoldAndSoDoThePerUserCaps() {
    qt().withExamples(EXAMPLES / 2)
        .withShrinkCycles(0)
        .forAll(scenarios(true))
        .checkAssert(CapPathIT::holds);
  }

  /**
   * Runs the scenario and fails if any check does, with its problems and with the smallest input
   * found that still fails the first of them.
   */
  private static void holds(Scenario s) {
    List<String> problems = problems(s, run(s));
    if (problems.isEmpty()) {
      return;
    }
    String check = problems.get(0).substring(0, 3);
    Scenario smallest = shrink(s, check);
    throw new AssertionError(
        "problems of the run:\n"
            + String.join("\n", problems)
            + "\n\nthe smallest input found that still fails "
            + check
            + ":"
            + smallest
            + String.join("\n", problems(smallest, run(smallest)))
            + "\n");
  }

  /**
   * The smallest scenario found that still fails {@code check}: sends removed in halves, quarters,
   * down to one at a time, then policy lines (caps, minimum interval, zones, global caps) one at a
   * time, then the wall-clock ticks and batching. Removing sends keeps the rest admissible: the
   * stream time can only fall.
   */
  static Scenario shrink(Scenario failing, String check) {
    int[] runs = {0};
    Predicate<Scenario> fails =
        c -> {
          if (runs[0]++ >= SHRINK_RUNS) {
            return false;
          }
          try {
            Policies.parse(c.yaml(), "shrinking");
          } catch (RuntimeException invalid) {
            return false;
          }
          return problems(c, run(c)).stream().anyMatch(p -> p.startsWith(check));
        };
    Scenario best = failing;
    for (int chunk = Math.max(1, best.inputs().size() / 2); chunk >= 1; chunk /= 2) {
      for (int start = 0; start < best.inputs().size(); ) {
        Scenario candidate = best.without(start, Math.min(best.inputs().size(), start + chunk));
        if (!candidate.inputs().isEmpty() && fails.test(candidate)) {
          best = candidate;
        } else {
          start += chunk;
        }
      }
    }
    for (int i = best.yaml().split("\n").length - 1; i >= 0; i--) {
      List<String> fewer = new ArrayList<>(List.of(best.yaml().split("\n")));
      String line = i < fewer.size() ? fewer.get(i).trim() : "";
      if (line.startsWith("- {") || line.startsWith("min-interval:") || line.startsWith("zone:")) {
        fewer.remove(i);
        if (fewer.get(fewer.size() - 1).equals("global:")) {
          fewer.remove(fewer.size() - 1); // its last cap gone: no global caps
        }
        Scenario candidate = best.withYaml(String.join("\n", fewer) + "\n");
        if (fails.test(candidate)) {
          best = candidate;
        }
      }
    }
    Scenario calm = best.withoutTicks();
    if (!calm.equals(best) && fails.test(calm)) {
      best = calm;
    }
    if (best.batchSize() > 1 && fails.test(best.withBatchSize(1))) {
      best = best.withBatchSize(1);
    }
    return best;
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs

  /**
   * A user of a run.
   *
   * @param id the user id
   * @param zone the time zone their sends name, or null (the policy's)
   * @param inSegment whether they are in the segment, when the policies have one
   */
  record User(long id, ZoneId zone, boolean inSegment) {
    @Override
    public String toString() {
      return "u" + id + (zone == null ? "" : " " + zone) + (inSegment ? " in " + SEGMENT : "");
    }
  }

  /**
   * One input record.
   *
   * @param pos its position in the input, carried in the send's attributes
   * @param userId the recipient
   * @param messageId the send's id
   * @param channel the send's channel
   * @param campaign the send's campaign
   * @param scheduledAt the decision time under the event clock, epoch ms
   * @param recordTs the record's timestamp, epoch ms
   * @param transactional whether it bypasses caps
   * @param replayOf the position of the input it replays, or -1
   * @param outsideSkew whether {@code scheduledAt} is further than the skew from the record's
   *     timestamp: a dead letter
   * @param tickMs how far the wall clock is advanced after it is piped (0: not)
   */
  record Input(
      int pos,
      long userId,
      String messageId,
      Channel channel,
      String campaign,
      long scheduledAt,
      long recordTs,
      boolean transactional,
      int replayOf,
      boolean outsideSkew,
      long tickMs) {
    @Override
    public String toString() {
      StringBuilder b =
          new StringBuilder()
              .append('#')
              .append(pos)
              .append(' ')
              .append(messageId)
              .append(" u")
              .append(userId)
              .append(' ')
              .append(channel)
              .append(' ')
              .append(campaign)
              .append(" at ")
              .append(Instant.ofEpochMilli(scheduledAt))
              .append(" record ")
              .append(Instant.ofEpochMilli(recordTs));
      if (transactional) {
        b.append(" transactional");
      }
      if (replayOf >= 0) {
        b.append(" replay of #").append(replayOf);
      }
      if (outsideSkew) {
        b.append(" outside the skew");
      }
      if (tickMs > 0) {
        b.append(", then the wall clock +").append(tickMs).append(" ms");
      }
      return b.toString();
    }
  }

  /**
   * One run's input: the policy file, the users, the sends in input order, the batch size and the
   * allowed skew.
   */
  record Scenario(String yaml, List<User> users, List<Input> inputs, int batchSize, Duration skew) {
    User user(long id) {
      return users.stream().filter(u -> u.id() == id).findFirst().orElseThrow();
    }

    /** The same scenario without the inputs at positions {@code from} to {@code to} (exclusive). */
    Scenario without(int from, int to) {
      List<Input> kept = new ArrayList<>(inputs.subList(0, from));
      kept.addAll(inputs.subList(to, inputs.size()));
      List<Input> renumbered = new ArrayList<>();
      Map<String, Integer> first = new HashMap<>();
      for (Input in : kept) {
        int pos = renumbered.size();
        Integer original = in.outsideSkew() ? null : first.get(in.userId() + "/" + in.messageId());
        if (!in.outsideSkew()) {
          first.putIfAbsent(in.userId() + "/" + in.messageId(), pos);
        }
        renumbered.add(
            new Input(
                pos,
                in.userId(),
                in.messageId(),
                in.channel(),
                in.campaign(),
                in.scheduledAt(),
                in.recordTs(),
                in.transactional(),
                original == null ? -1 : original,
                in.outsideSkew(),
                in.tickMs()));
      }
      Set<Long> named = new HashSet<>();
      renumbered.forEach(in -> named.add(in.userId()));
      List<User> left = users.stream().filter(u -> named.contains(u.id())).toList();
      return new Scenario(yaml, left, renumbered, batchSize, skew);
    }

    Scenario withYaml(String other) {
      return new Scenario(other, users, inputs, batchSize, skew);
    }

    Scenario withBatchSize(int size) {
      return new Scenario(yaml, users, inputs, size, skew);
    }

    Scenario withoutTicks() {
      List<Input> calm = new ArrayList<>();
      for (Input in : inputs) {
        calm.add(
            new Input(
                in.pos(),
                in.userId(),
                in.messageId(),
                in.channel(),
                in.campaign(),
                in.scheduledAt(),
                in.recordTs(),
                in.transactional(),
                in.replayOf(),
                in.outsideSkew(),
                0));
      }
      return new Scenario(yaml, users, calm, batchSize, skew);
    }

    @Override
    public String toString() {
      return "\npolicies:\n"
          + yaml
          + "users: "
          + users
          + "\nbatch.max.records="
          + batchSize
          + ", cap.max-skew.ms="
          + skew.toMillis()
          + "\nsends:\n  "
          + inputs.stream().map(Input::toString).collect(Collectors.joining("\n  "))
          + "\n";
    }
  }

  private record RawCap(int window, int limit, int channel) {}

  private record RawPolicy(List<RawCap> caps, int interval, int zone) {}

  private record RawGlobal(int per, int window, int limit, int restrict, int maxBatch) {}

  /** The random parts of one send; {@link Scenario} building gives them meaning. */
  private record RawSend(
      int user,
      int channel,
      int stepMinutes,
      int offsetMinutes,
      int kind,
      int pick,
      int snap,
      int tick,
      int campaign) {}

  private record SendHead(int user, int channel, int stepMinutes, int offsetMinutes, int kind) {}

  private record SendTail(int pick, int snap, int tick, int campaign) {}

  private static Gen<Scenario> scenarios(boolean withGlobalCaps) {
    Gen<RawCap> cap =
        integers()
            .between(0, WINDOWS.size() - 1)
            .zip(integers().between(1, 5), integers().between(0, 9), RawCap::new);
    Gen<RawPolicy> policy =
        lists()
            .of(cap)
            .ofSizeBetween(1, 3)
            .zip(
                integers().between(0, INTERVALS.size() - 1),
                integers().between(0, ZONES.size() - 1),
                RawPolicy::new);
    Gen<List<RawPolicy>> policies = lists().of(policy).ofSizeBetween(1, 2);
    Gen<List<Integer>> users = lists().of(integers().between(0, ZONES.size())).ofSizeBetween(1, 4);
    int skewMinutes = (int) SKEW.toMinutes();
    Gen<Integer> offset =
        integers().between(-60, 60).mix(integers().between(-skewMinutes, skewMinutes));
    Gen<SendHead> head =
        integers()
            .between(0, 3)
            .zip(
                integers().between(0, 3),
                integers().between(0, 240),
                offset,
                integers().between(0, 99),
                SendHead::new);
    Gen<SendTail> tail =
        integers()
            .between(0, 7)
            .zip(
                integers().between(0, 5),
                integers().between(0, 19),
                integers().between(0, 1),
                SendTail::new);
    Gen<RawSend> send =
        head.zip(
            tail,
            (h, t) ->
                new RawSend(
                    h.user(),
                    h.channel(),
                    h.stepMinutes(),
                    h.offsetMinutes(),
                    h.kind(),
                    t.pick(),
                    t.snap(),
                    t.tick(),
                    t.campaign()));
    Gen<List<RawSend>> sends = lists().of(send).ofSizeBetween(1, 80);
    Gen<RawGlobal> global =
        integers()
            .between(0, 2)
            .zip(
                integers().between(0, GLOBAL_WINDOWS.size() - 1),
                integers().between(1, 8),
                integers().between(0, 9),
                integers().between(1, 4),
                RawGlobal::new);
    Gen<List<RawGlobal>> globals =
        withGlobalCaps
            ? lists().of(global).ofSizeBetween(1, 2)
            : arbitrary().constant(List.<RawGlobal>of());
    return policies.zip(users, sends, integers().between(1, 50), globals, CapPathIT::scenario);
  }

  /**
   * Gives the random parts their meaning: the policy file (the first policy is the default, a
   * second one the segment's, whose only user is the first), the users' zones, and the sends.
   *
   * <p>Record timestamps go forward by up to 4 h per send, sometimes back by as much (never more
   * than 6 h behind the stream time). {@code scheduledAt} is the timestamp plus up to the skew
   * either way (mostly within an hour), raised to the stream time minus the skew if it was below;
   * then, where that keeps it admissible, sometimes moved onto a whole hour or a millisecond either
   * side of one (where generated windows begin and end), or onto the nearest start of a day in the
   * zone the user's calendar caps count in or a millisecond before it. A replay repeats an earlier
   * send whole, from a later record; a send outside the skew is stamped at the stream time and
   * scheduled beyond the skew.
   */
  private static Scenario scenario(
      List<RawPolicy> policies,
      List<Integer> userZones,
      List<RawSend> raw,
      int batchSize,
      List<RawGlobal> globals) {
    StringBuilder yaml = new StringBuilder();
    boolean segment = policies.size() > 1;
    if (segment) {
      yaml.append("segments:\n  - name: ").append(SEGMENT).append('\n');
      yaml.append(policyYaml(policies.get(1), "    "));
    } else {
      yaml.append("segments: []\n");
    }
    yaml.append("default:\n").append(policyYaml(policies.get(0), "  "));
    if (!globals.isEmpty()) {
      yaml.append("global:\n");
      for (int i = 0; i < globals.size(); i++) {
        RawGlobal g = globals.get(i);
        yaml.append("  - {name: g")
            .append(i)
            .append(", per: ")
            .append(List.of("all", "campaign", "channel").get(g.per()))
            .append(", window: ")
            .append(GLOBAL_WINDOWS.get(g.window()))
            .append(", limit: ")
            .append(g.limit())
            .append(", max-batch: ")
            .append(g.maxBatch());
        switch (g.restrict()) {
          case 7 -> yaml.append(", channel: EMAIL");
          case 8 -> yaml.append(", channel: PUSH");
          case 9 -> yaml.append(", campaign: c1");
          default -> {}
        }
        yaml.append("}\n");
      }
    }
    List<User> users = new ArrayList<>();
    for (int i = 0; i < userZones.size(); i++) {
      int z = userZones.get(i);
      users.add(new User(101 + i, z == 0 ? null : ZONES.get(z - 1), segment && i == 0));
    }

    long skew = SKEW.toMillis();
    long ts = T0.toEpochMilli();
    long streamTime = ts;
    List<Input> inputs = new ArrayList<>();
    List<Input> decidable = new ArrayList<>();
    for (RawSend r : raw) {
      int pos = inputs.size();
      User user = users.get(r.user() % users.size());
      Channel channel = Channel.values()[r.channel()];
      String campaign = "c" + (r.campaign() + 1);
      long tick =
          switch (r.tick()) {
            case 17 -> 100;
            case 18 -> 600;
            case 19 -> 1500;
            default -> 0;
          };
      if (r.kind() >= 98) {
        long scheduledAt = streamTime + skew + MINUTE + Math.abs(r.offsetMinutes()) * MINUTE;
        inputs.add(
            new Input(
                pos,
                user.id(),
                "m" + pos,
                channel,
                campaign,
                scheduledAt,
                streamTime,
                false,
                -1,
                true,
                tick));
        continue;
      }
      long step = r.stepMinutes() * MINUTE;
      ts = r.kind() >= 73 && r.kind() < 83 ? Math.max(streamTime - 6 * HOUR, ts - step) : ts + step;
      streamTime = Math.max(streamTime, ts);
      if (r.kind() >= 83 && r.kind() < 93 && !decidable.isEmpty()) {
        Input original = decidable.get(decidable.size() - 1 - r.pick() % decidable.size());
        if (admissible(original.scheduledAt(), ts, streamTime, skew)) {
          Input replay =
              new Input(
                  pos,
                  original.userId(),
                  original.messageId(),
                  original.channel(),
                  original.campaign(),
                  original.scheduledAt(),
                  ts,
                  original.transactional(),
                  original.replayOf() >= 0 ? original.replayOf() : original.pos(),
                  false,
                  tick);
          inputs.add(replay);
          continue;
        }
      }
      long scheduledAt = ts + r.offsetMinutes() * MINUTE;
      scheduledAt = Math.max(scheduledAt, streamTime - skew);
      long hour = Math.floorDiv(scheduledAt, HOUR) * HOUR;
      long midnight = nearestMidnight(scheduledAt, zoneOf(user, policies));
      long snapped =
          switch (r.snap()) {
            case 1 -> hour;
            case 2 -> hour + 1;
            case 3 -> hour - 1;
            case 4 -> midnight;
            case 5 -> midnight - 1;
            default -> scheduledAt;
          };
      if (admissible(snapped, ts, streamTime, skew)) {
        scheduledAt = snapped;
      }
      Input fresh =
          new Input(
              pos,
              user.id(),
              "m" + pos,
              channel,
              campaign,
              scheduledAt,
              ts,
              r.kind() >= 93,
              -1,
              false,
              tick);
      inputs.add(fresh);
      decidable.add(fresh);
    }
    return new Scenario(yaml.toString(), users, inputs, batchSize, SKEW);
  }

  /** The zone a user's calendar caps count in: theirs, else their policy's. */
  private static ZoneId zoneOf(User user, List<RawPolicy> policies) {
    if (user.zone() != null) {
      return user.zone();
    }
    return ZONES.get(policies.get(user.inSegment() ? 1 : 0).zone());
  }

  /** The start of the calendar day, in {@code zone}, nearest to {@code t}. */
  private static long nearestMidnight(long t, ZoneId zone) {
    LocalDate day = Instant.ofEpochMilli(t).atZone(zone).toLocalDate();
    long start = day.atStartOfDay(zone).toInstant().toEpochMilli();
    long next = day.plusDays(1).atStartOfDay(zone).toInstant().toEpochMilli();
    return t - start <= next - t ? start : next;
  }

  private static boolean admissible(long scheduledAt, long recordTs, long streamTime, long skew) {
    return Math.abs(scheduledAt - recordTs) <= skew && scheduledAt >= streamTime - skew;
  }

  private static String policyYaml(RawPolicy p, String indent) {
    StringBuilder b = new StringBuilder();
    if (p.zone() != 0) {
      b.append(indent).append("zone: ").append(ZONES.get(p.zone())).append('\n');
    }
    String interval = INTERVALS.get(p.interval());
    if (!interval.isEmpty()) {
      b.append(indent).append("min-interval: ").append(interval).append('\n');
    }
    b.append(indent).append("caps:\n");
    for (RawCap c : p.caps()) {
      b.append(indent)
          .append("  - {window: ")
          .append(WINDOWS.get(c.window()))
          .append(", limit: ")
          .append(c.limit());
      if (c.channel() >= 7) {
        b.append(", channel: ").append(List.of("EMAIL", "PUSH", "SMS").get(c.channel() - 7));
      }
      b.append("}\n");
    }
    return b.toString();
  }

  // ---------------------------------------------------------------------------------------------
  // Running

  /**
   * What an output record says of a send, or what the rules say it should: a delivery ({@code
   * delivered}), a suppression (its reason) or a dead letter, with the fields of a suppression.
   */
  record Seen(
      String kind,
      String segment,
      Instant decidedAt,
      String capWindow,
      Long capWindowMs,
      Integer capLimit,
      Integer capCount,
      Instant nextEligibleAt,
      String globalCap) {
    static final Seen DEAD_LETTER =
        new Seen("dead letter", null, null, null, null, null, null, null, null);

    static Seen of(Delivery d) {
      return new Seen(
          d.getFailOpen() ? "delivered fail-open" : "delivered",
          d.getSegment(),
          d.getDecidedAt(),
          null,
          null,
          null,
          null,
          null,
          null);
    }

    static Seen of(Suppression s) {
      return new Seen(
          s.getReason() + (s.getShadow() ? " shadow" : ""),
          s.getSegment(),
          s.getDecidedAt(),
          s.getCapWindow(),
          s.getCapWindowMs(),
          s.getCapLimit(),
          s.getCapCount(),
          s.getNextEligibleAt(),
          s.getGlobalCap());
    }

    /** What the reference model's verdict looks like on the output topics. */
    static Seen of(ReferenceCaps.Verdict v, String segment, long now) {
      Instant at = Instant.ofEpochMilli(now);
      Instant next = Instant.ofEpochMilli(v.nextEligibleAt());
      return switch (v.outcome()) {
        case ALLOWED, REPLAY, TRANSACTIONAL ->
            new Seen("delivered", segment, at, null, null, null, null, null, null);
        case CAP ->
            new Seen(
                "CAP",
                segment,
                at,
                v.cap().name(),
                v.cap().window().toMillis(),
                v.cap().limit(),
                v.count(),
                next,
                null);
        case MIN_INTERVAL ->
            new Seen("MIN_INTERVAL", segment, at, null, null, null, null, next, null);
      };
    }

    boolean delivered() {
      return kind.startsWith("delivered");
    }

    @Override
    public String toString() {
      StringBuilder b = new StringBuilder(kind);
      if (capWindow != null) {
        b.append(' ')
            .append(globalCap == null ? "" : globalCap + " ")
            .append(capWindow)
            .append(" limit ")
            .append(capLimit);
      }
      if (capCount != null) {
        b.append(" count ").append(capCount);
      }
      if (nextEligibleAt != null) {
        b.append(", next eligible ").append(nextEligibleAt);
      }
      return b.toString();
    }
  }

  /**
   * The outputs of one run: by input position, every output that names it; the sends delivered, by
   * position; the outputs whose message id is not that of the input at their position; and the
   * policies it ran under.
   */
  record Run(
      Policies policies,
      Map<Integer, List<Seen>> outputs,
      Map<Integer, ScheduledSend> delivered,
      List<String> misfits) {
    /** The one output of position {@code pos}, or null if it has none or several. */
    Seen seen(int pos) {
      List<Seen> all = outputs.getOrDefault(pos, List.of());
      return all.size() == 1 ? all.get(0) : null;
    }
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
    InstantSource clock = InstantSource.fixed(T0);
    Map<Integer, List<Seen>> outputs = new TreeMap<>();
    Map<Integer, ScheduledSend> delivered = new HashMap<>();
    List<String> misfits = new ArrayList<>();
    BiConsumer<ScheduledSend, Seen> collect =
        (send, seen) -> {
          int pos = pos(send);
          if (pos < 0
              || pos >= s.inputs().size()
              || !s.inputs().get(pos).messageId().equals(send.getMessageId())) {
            misfits.add(send.getMessageId() + " at position " + pos + ": " + seen);
          }
          outputs.computeIfAbsent(pos, p -> new ArrayList<>()).add(seen);
        };
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
                    undecided,
                    metrics),
                SendcapTopology.streamsProperties(config))) {
      if (!policies.segmentNames().isEmpty()) {
        UserIds members = new UserIds();
        s.users().stream().filter(User::inSegment).forEach(u -> members.add(u.id()));
        TestInputTopic<String, byte[]> segments =
            driver.createInputTopic("segments", new StringSerializer(), new ByteArraySerializer());
        for (SegmentRecords.Entry e : SegmentRecords.publish(SEGMENT, 1, members, 1024, 0)) {
          segments.pipeInput(e.key(), e.value());
        }
      }
      ByteArraySerializer ser = new ByteArraySerializer();
      ByteArrayDeserializer de = new ByteArrayDeserializer();
      TestInputTopic<byte[], byte[]> input = driver.createInputTopic("campaign-sends", ser, ser);
      TestOutputTopic<byte[], byte[]> deliveries = driver.createOutputTopic("deliveries", de, de);
      TestOutputTopic<byte[], byte[]> suppressed = driver.createOutputTopic("suppressed", de, de);
      TestOutputTopic<byte[], byte[]> dlq = driver.createOutputTopic("campaign-sends-dlq", de, de);
      for (Input in : s.inputs()) {
        input.pipeInput(
            Long.toString(in.userId()).getBytes(StandardCharsets.UTF_8),
            SENDS.encode(send(in, s.user(in.userId()))),
            Instant.ofEpochMilli(in.recordTs()));
        if (in.tickMs() > 0) {
          driver.advanceWallClockTime(Duration.ofMillis(in.tickMs()));
        }
      }
      // A partial batch is flushed once it has waited batch.max.wait.ms, and forwarded at the next
      // tick after its answer.
      for (int i = 0; i < 10 && undecided.count() > 0; i++) {
        driver.advanceWallClockTime(Duration.ofMillis(1100));
      }
      for (byte[] b : deliveries.readValuesToList()) {
        Delivery d = DELIVERIES.decode(b);
        collect.accept(d.getSend(), Seen.of(d));
        delivered.put(pos(d.getSend()), d.getSend());
      }
      for (byte[] b : suppressed.readValuesToList()) {
        Suppression sup = SUPPRESSIONS.decode(b);
        collect.accept(sup.getSend(), Seen.of(sup));
      }
      for (byte[] b : dlq.readValuesToList()) {
        collect.accept(SENDS.decode(b), Seen.DEAD_LETTER);
      }
    }
    return new Run(policies, outputs, delivered, misfits);
  }

  private static ScheduledSend send(Input in, User user) {
    return ScheduledSend.newBuilder()
        .setMessageId(in.messageId())
        .setCampaignId(in.campaign())
        .setUserId(in.userId())
        .setChannel(in.channel())
        .setScheduledAt(Instant.ofEpochMilli(in.scheduledAt()))
        .setTransactional(in.transactional())
        .setUserTimeZone(user.zone() == null ? null : user.zone().getId())
        .setAttributes(Map.of("pos", Integer.toString(in.pos())))
        .build();
  }

  private static int pos(ScheduledSend send) {
    return Integer.parseInt(send.getAttributes().get("pos"));
  }

  // ---------------------------------------------------------------------------------------------
  // Checks

  /** Every check the run fails, each naming its letter and the sends at fault. */
  static List<String> problems(Scenario s, Run run) {
    List<String> problems = new ArrayList<>();
    decidedOnce(s, run, problems);
    Map<Long, List<Input>> allowed = allowedSends(s, run);
    withinCaps(s, run, allowed, problems);
    replaysAndTransactionalDelivered(s, run, problems);
    if (run.policies().global().isEmpty()) {
      asTheReferenceModel(s, run, problems);
    } else {
      withinGlobalCaps(run, allowed, problems);
    }
    return problems;
  }

  /** [a] Each input has exactly one output, a dead letter iff it is outside the skew. */
  private static void decidedOnce(Scenario s, Run run, List<String> problems) {
    Set<Integer> known = new HashSet<>();
    for (Input in : s.inputs()) {
      known.add(in.pos());
      List<Seen> out = run.outputs().getOrDefault(in.pos(), List.of());
      if (out.size() != 1) {
        problems.add("[a] " + in + ": " + out.size() + " outputs " + out);
      } else if (in.outsideSkew() != out.get(0).equals(Seen.DEAD_LETTER)) {
        problems.add("[a] " + in + ": " + out.get(0));
      }
    }
    for (Integer pos : run.outputs().keySet()) {
      if (!known.contains(pos)) {
        problems.add("[a] an output for no input: position " + pos);
      }
    }
    run.misfits()
        .forEach(m -> problems.add("[a] an output not of the input at its position: " + m));
  }

  /**
   * The sends each user was allowed that consume quota: delivered, not transactional, the first
   * delivery of their message id.
   */
  private static Map<Long, List<Input>> allowedSends(Scenario s, Run run) {
    Map<Long, List<Input>> allowed = new LinkedHashMap<>();
    Set<String> seen = new HashSet<>();
    for (Input in : s.inputs()) {
      Seen out = run.seen(in.pos());
      if (out != null
          && out.delivered()
          && !in.transactional()
          && seen.add(in.userId() + "/" + in.messageId())) {
        allowed.computeIfAbsent(in.userId(), u -> new ArrayList<>()).add(in);
      }
    }
    return allowed;
  }

  /**
   * [b] For each user and cap of their policy, in every true window of the cap no more allowed
   * sends than its limit; and no two allowed sends closer than the minimum interval.
   */
  private static void withinCaps(
      Scenario s, Run run, Map<Long, List<Input>> allowed, List<String> problems) {
    for (Map.Entry<Long, List<Input>> e : allowed.entrySet()) {
      User user = s.user(e.getKey());
      Policy policy = policyOf(run.policies(), user);
      ZoneId zone = user.zone() != null ? user.zone() : policy.zone();
      for (Cap cap : policy.caps()) {
        List<Input> counted =
            e.getValue().stream()
                .filter(in -> cap.channel() == null || cap.channel() == in.channel())
                .toList();
        for (Input last : counted) {
          List<Input> window =
              counted.stream()
                  .filter(in -> sameWindow(cap, in.scheduledAt(), last.scheduledAt(), zone))
                  .toList();
          if (window.size() > cap.limit()) {
            problems.add(
                "[b] u"
                    + user.id()
                    + " holds "
                    + window.size()
                    + " allowed sends in one window of cap "
                    + cap.name()
                    + (cap.channel() == null ? "" : " " + cap.channel())
                    + " (limit "
                    + cap.limit()
                    + ") ending at "
                    + Instant.ofEpochMilli(last.scheduledAt())
                    + ": "
                    + window.stream().map(in -> "#" + in.pos()).toList());
            break;
          }
        }
      }
      long interval = policy.minInterval().toMillis();
      List<Input> byTime =
          e.getValue().stream()
              .sorted((a, b) -> Long.compare(a.scheduledAt(), b.scheduledAt()))
              .toList();
      for (int i = 1; interval > 0 && i < byTime.size(); i++) {
        Input a = byTime.get(i - 1);
        Input b = byTime.get(i);
        if (b.scheduledAt() - a.scheduledAt() < interval) {
          problems.add(
              "[b] u"
                  + user.id()
                  + " was allowed #"
                  + a.pos()
                  + " and #"
                  + b.pos()
                  + " less than the minimum interval "
                  + policy.minInterval()
                  + " apart");
        }
      }
    }
  }

  /**
   * Whether a send at {@code t} is in the window of {@code cap} that ends with a send at {@code
   * last}: for a rolling window, {@code last − w < t <= last}; for a calendar cap, the same period
   * in {@code zone}.
   */
  private static boolean sameWindow(Cap cap, long t, long last, ZoneId zone) {
    if (cap.kind() == Cap.Kind.ROLLING) {
      return t > last - cap.window().toMillis() && t <= last;
    }
    return period(cap.kind(), t, zone).equals(period(cap.kind(), last, zone));
  }

  private static Object period(Cap.Kind kind, long t, ZoneId zone) {
    LocalDate day = Instant.ofEpochMilli(t).atZone(zone).toLocalDate();
    return switch (kind) {
      case CALENDAR_DAY -> day;
      case CALENDAR_WEEK ->
          List.of(day.get(IsoFields.WEEK_BASED_YEAR), day.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR));
      case CALENDAR_MONTH -> YearMonth.from(day);
      case ROLLING -> throw new IllegalArgumentException("a rolling window has no period");
    };
  }

  private static Policy policyOf(Policies policies, User user) {
    if (user.inSegment() && !policies.segments().isEmpty()) {
      return policies.segments().get(0);
    }
    return policies.defaultPolicy();
  }

  /** [r] Transactional sends, and sends whose message id the user was allowed before, delivered. */
  private static void replaysAndTransactionalDelivered(Scenario s, Run run, List<String> problems) {
    Set<String> allowedIds = new HashSet<>();
    for (Input in : s.inputs()) {
      if (in.outsideSkew()) {
        continue;
      }
      Seen out = run.seen(in.pos());
      String id = in.userId() + "/" + in.messageId();
      boolean delivered = out != null && out.delivered();
      if (in.transactional() && !delivered) {
        problems.add("[r] transactional " + in + ": " + out);
      } else if (allowedIds.contains(id) && !delivered) {
        problems.add("[r] a replay of an allowed send " + in + ": " + out);
      }
      if (delivered) {
        allowedIds.add(id);
      }
    }
  }

  /** [c] Every decision as the reference model's, fed the sends in input order. */
  private static void asTheReferenceModel(Scenario s, Run run, List<String> problems) {
    ReferenceCaps reference = new ReferenceCaps();
    List<String> mismatches = new ArrayList<>();
    for (Input in : s.inputs()) {
      if (in.outsideSkew()) {
        continue;
      }
      User user = s.user(in.userId());
      Policy policy = policyOf(run.policies(), user);
      ReferenceCaps.Verdict verdict =
          reference.decide(
              new ReferenceCaps.Send(
                  in.userId(),
                  in.messageId(),
                  in.channel(),
                  in.scheduledAt(),
                  in.transactional(),
                  user.zone()),
              policy);
      Seen expected = Seen.of(verdict, policy.segment(), in.scheduledAt());
      Seen actual = run.seen(in.pos());
      if (!Objects.equals(expected, actual)) {
        mismatches.add(in + ":\n      sendcap: " + actual + "\n      the rules: " + expected);
      }
    }
    if (!mismatches.isEmpty()) {
      problems.add(
          "[c] "
              + mismatches.size()
              + " decisions differ from the reference model's; the first:\n    "
              + String.join("\n    ", mismatches.subList(0, Math.min(5, mismatches.size()))));
    }
  }

  /** [d] No counter of a global cap holds more allowed sends in one fixed window than its limit. */
  private static void withinGlobalCaps(
      Run run, Map<Long, List<Input>> allowed, List<String> problems) {
    for (GlobalCap cap : run.policies().global()) {
      Map<String, List<Integer>> counters = new TreeMap<>();
      for (List<Input> sends : allowed.values()) {
        for (Input in : sends) {
          ScheduledSend send = run.delivered().get(in.pos());
          if (cap.appliesTo(send)) {
            long window = Math.floorDiv(in.scheduledAt(), cap.window().toMillis());
            String counter =
                cap.scopeOf(send)
                    + " from "
                    + Instant.ofEpochMilli(window * cap.window().toMillis());
            counters.computeIfAbsent(counter, c -> new ArrayList<>()).add(in.pos());
          }
        }
      }
      counters.forEach(
          (counter, positions) -> {
            if (positions.size() > cap.limit()) {
              problems.add(
                  "[d] global cap "
                      + cap.name()
                      + " (limit "
                      + cap.limit()
                      + " per "
                      + cap.windowName()
                      + ") allowed "
                      + positions.size()
                      + " sends of "
                      + counter
                      + ": "
                      + positions);
            }
          });
    }
  }
}
