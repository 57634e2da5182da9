package io.sendcap.topology;

import static org.quicktheories.generators.SourceDSL.arbitrary;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import io.sendcap.avro.Channel;
import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import org.quicktheories.core.Gen;

/**
 * The generator of {@link CapPathIT}'s inputs: random policy files (per-user caps, minimum
 * intervals, zones, a segment, global caps), users, batch sizes and sends, out of order, replayed,
 * transactional or outside the skew, from the random draws of QuickTheories.
 *
 * <p>Generated sends are admissible under the event clock: {@code |scheduledAt − record timestamp|
 * <= cap.max-skew.ms} and {@code scheduledAt >= stream time − cap.max-skew.ms}, where the stream
 * time is the largest record timestamp so far, this record's included; but for the sends outside
 * the skew, which are meant to be dead-lettered.
 */
final class CapPathInputs {
  /** A Saturday: Berlin leaves summer time the next day, New York a week later; a month ends. */
  static final Instant T0 = Instant.parse("2026-10-24T00:00:00Z");

  static final Duration SKEW = Duration.ofDays(2);
  static final long MINUTE = 60_000;
  static final long HOUR = 60 * MINUTE;
  static final String SEGMENT = "vip";

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

  private CapPathInputs() {}

  /**
   * The random parts of one per-user cap: an index into the windows, a limit from 1 to 5, and a
   * channel (7 to 9: EMAIL, PUSH, SMS; else every channel).
   */
  private record RawCap(int window, int limit, int channel) {}

  /** The random parts of one policy: its caps, and indexes into the intervals and the zones. */
  private record RawPolicy(List<RawCap> caps, int interval, int zone) {}

  /**
   * The random parts of one global cap: what it counts per (all, campaign, channel), an index into
   * the global windows, a limit from 1 to 8, a restriction (7 and 8: EMAIL, PUSH; 9: campaign c1;
   * else none) and a max-batch from 1 to 4.
   */
  private record RawGlobal(int per, int window, int limit, int restrict, int maxBatch) {}

  /**
   * The random parts of one send; {@link Sends} gives them meaning.
   *
   * @param user the user, modulo the number of users
   * @param channel the channel's ordinal
   * @param stepMinutes how far the record timestamp moves, forward or back
   * @param offsetMinutes {@code scheduledAt} less the record timestamp, before any snapping
   * @param kind from 0 to 99: below 73 forward, below 83 back, below 93 a replay where one is
   *     admissible, below 98 transactional, else outside the skew
   * @param pick which earlier send a replay repeats, counted back from the latest
   * @param snap 1 to 3 onto or beside a whole hour, 4 and 5 onto or before a midnight, else not
   * @param tick 17 to 19 a wall-clock tick after the send, else none
   * @param campaign the campaign, c1 or c2
   */
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

  /** Scenarios of one or two policies, up to 4 users, 1 to 80 sends and batches of 1 to 50. */
  static Gen<Scenario> scenarios(boolean withGlobalCaps) {
    Gen<List<RawPolicy>> policies = lists().of(policy()).ofSizeBetween(1, 2);
    Gen<List<Integer>> users = lists().of(integers().between(0, ZONES.size())).ofSizeBetween(1, 4);
    Gen<List<RawSend>> sends = lists().of(send()).ofSizeBetween(1, 80);
    Gen<List<RawGlobal>> globals =
        withGlobalCaps
            ? lists().of(global()).ofSizeBetween(1, 2)
            : arbitrary().constant(List.<RawGlobal>of());
    return policies.zip(users, sends, integers().between(1, 50), globals, CapPathInputs::scenario);
  }

  private static Gen<RawPolicy> policy() {
    Gen<RawCap> cap =
        integers()
            .between(0, WINDOWS.size() - 1)
            .zip(integers().between(1, 5), integers().between(0, 9), RawCap::new);
    return lists()
        .of(cap)
        .ofSizeBetween(1, 3)
        .zip(
            integers().between(0, INTERVALS.size() - 1),
            integers().between(0, ZONES.size() - 1),
            RawPolicy::new);
  }

  /** Sends drawn field by field, in the order of {@link RawSend}'s components. */
  private static Gen<RawSend> send() {
    int skewMinutes = (int) SKEW.toMinutes();
    Gen<Integer> offset =
        integers().between(-60, 60).mix(integers().between(-skewMinutes, skewMinutes));
    return in ->
        new RawSend(
            integers().between(0, 3).generate(in),
            integers().between(0, 3).generate(in),
            integers().between(0, 240).generate(in),
            offset.generate(in),
            integers().between(0, 99).generate(in),
            integers().between(0, 7).generate(in),
            integers().between(0, 5).generate(in),
            integers().between(0, 19).generate(in),
            integers().between(0, 1).generate(in));
  }

  private static Gen<RawGlobal> global() {
    return integers()
        .between(0, 2)
        .zip(
            integers().between(0, GLOBAL_WINDOWS.size() - 1),
            integers().between(1, 8),
            integers().between(0, 9),
            integers().between(1, 4),
            RawGlobal::new);
  }

  /**
   * Gives the random parts their meaning: the policy file (the first policy is the default, a
   * second one the segment's, whose only user is the first), the users' zones, and the sends.
   */
  private static Scenario scenario(
      List<RawPolicy> policies,
      List<Integer> userZones,
      List<RawSend> raw,
      int batchSize,
      List<RawGlobal> globals) {
    boolean segment = policies.size() > 1;
    List<User> users = new ArrayList<>();
    for (int i = 0; i < userZones.size(); i++) {
      int z = userZones.get(i);
      users.add(new User(101 + i, z == 0 ? null : ZONES.get(z - 1), segment && i == 0));
    }
    Sends sends = new Sends(users, policies);
    raw.forEach(sends::add);
    return new Scenario(policyFile(policies, globals), users, sends.inputs, batchSize, SKEW);
  }

  // ---------------------------------------------------------------------------------------------
  // The policy file

  private static String policyFile(List<RawPolicy> policies, List<RawGlobal> globals) {
    StringBuilder yaml = new StringBuilder();
    if (policies.size() > 1) {
      yaml.append("segments:\n  - name: ").append(SEGMENT).append('\n');
      yaml.append(policyYaml(policies.get(1), "    "));
    } else {
      yaml.append("segments: []\n");
    }
    yaml.append("default:\n").append(policyYaml(policies.get(0), "  "));
    if (!globals.isEmpty()) {
      yaml.append("global:\n");
      for (int i = 0; i < globals.size(); i++) {
        yaml.append(globalYaml(i, globals.get(i)));
      }
    }
    return yaml.toString();
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

  /** The line of global cap {@code g<i>}. */
  private static String globalYaml(int i, RawGlobal g) {
    StringBuilder b =
        new StringBuilder()
            .append("  - {name: g")
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
      case 7 -> b.append(", channel: EMAIL");
      case 8 -> b.append(", channel: PUSH");
      case 9 -> b.append(", campaign: c1");
      default -> {}
    }
    return b.append("}\n").toString();
  }

  // ---------------------------------------------------------------------------------------------
  // The sends

  /**
   * The sends of a scenario, made one raw send at a time with the record timestamps and stream time
   * they advance.
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
  private static final class Sends {
    private final List<User> users;
    private final List<RawPolicy> policies;
    private final long skew = SKEW.toMillis();
    private long ts = T0.toEpochMilli();
    private long streamTime = ts;
    private final List<Input> inputs = new ArrayList<>();

    /** The sends made so far that were neither replays nor outside the skew. */
    private final List<Input> decidable = new ArrayList<>();

    Sends(List<User> users, List<RawPolicy> policies) {
      this.users = users;
      this.policies = policies;
    }

    /** Adds the send {@code r} makes: one outside the skew, a replay, or a new send. */
    void add(RawSend r) {
      if (r.kind() >= 98) {
        long scheduledAt = streamTime + skew + MINUTE + Math.abs(r.offsetMinutes()) * MINUTE;
        inputs.add(own(r, scheduledAt, streamTime, false, true));
        return;
      }
      long step = r.stepMinutes() * MINUTE;
      ts = r.kind() >= 73 && r.kind() < 83 ? Math.max(streamTime - 6 * HOUR, ts - step) : ts + step;
      streamTime = Math.max(streamTime, ts);
      if (r.kind() >= 83 && r.kind() < 93 && !decidable.isEmpty()) {
        Input original = decidable.get(decidable.size() - 1 - r.pick() % decidable.size());
        if (admissible(original.scheduledAt(), ts, streamTime, skew)) {
          int replays = original.replayOf() >= 0 ? original.replayOf() : original.pos();
          inputs.add(original.with(inputs.size(), ts, replays, tickMs(r)));
          return;
        }
      }
      Input fresh = own(r, scheduledAt(r), ts, r.kind() >= 93, false);
      inputs.add(fresh);
      decidable.add(fresh);
    }

    /** A send that is not a replay: its message id is {@code m} and its position. */
    private Input own(
        RawSend r, long scheduledAt, long recordTs, boolean transactional, boolean outsideSkew) {
      int pos = inputs.size();
      User user = user(r);
      Channel channel = Channel.values()[r.channel()];
      String campaign = "c" + (r.campaign() + 1);
      return new Input(
          pos,
          user.id(),
          "m" + pos,
          channel,
          campaign,
          scheduledAt,
          recordTs,
          transactional,
          -1,
          outsideSkew,
          tickMs(r));
    }

    private User user(RawSend r) {
      return users.get(r.user() % users.size());
    }

    /** The decision time of a new admissible send, snapped to a window's edge where it may be. */
    private long scheduledAt(RawSend r) {
      long scheduledAt = ts + r.offsetMinutes() * MINUTE;
      scheduledAt = Math.max(scheduledAt, streamTime - skew);
      long hour = Math.floorDiv(scheduledAt, HOUR) * HOUR;
      long midnight = nearestMidnight(scheduledAt, zoneOf(user(r)));
      long snapped =
          switch (r.snap()) {
            case 1 -> hour;
            case 2 -> hour + 1;
            case 3 -> hour - 1;
            case 4 -> midnight;
            case 5 -> midnight - 1;
            default -> scheduledAt;
          };
      return admissible(snapped, ts, streamTime, skew) ? snapped : scheduledAt;
    }

    /** The zone a user's calendar caps count in: theirs, else their policy's. */
    private ZoneId zoneOf(User user) {
      if (user.zone() != null) {
        return user.zone();
      }
      return ZONES.get(policies.get(user.inSegment() ? 1 : 0).zone());
    }
  }

  private static long tickMs(RawSend r) {
    return switch (r.tick()) {
      case 17 -> 100;
      case 18 -> 600;
      case 19 -> 1500;
      default -> 0;
    };
  }

  /** The start of the calendar day, in {@code zone}, nearest to {@code t}. */
  private static long nearestMidnight(long t, ZoneId zone) {
    LocalDate day = Instant.ofEpochMilli(t).atZone(zone).toLocalDate();
    long start = day.atStartOfDay(zone).toInstant().toEpochMilli();
    long next = day.plusDays(1).atStartOfDay(zone).toInstant().toEpochMilli();
    return t - start <= next - t ? start : next;
  }

  /** Whether a send is admissible under the event clock, as the class comment says. */
  private static boolean admissible(long scheduledAt, long recordTs, long streamTime, long skew) {
    return Math.abs(scheduledAt - recordTs) <= skew && scheduledAt >= streamTime - skew;
  }
}
