package io.sendcap.reference;

import io.sendcap.avro.Channel;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.time.DayOfWeek;
import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.ZoneId;
import java.time.temporal.IsoFields;
import java.time.temporal.TemporalAdjusters;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The reference model of sendcap's per-user decisions: the rules of DESIGN.md ("Precisely") for
 * sliding-log caps, the minimum interval, replays and transactional sends, stated one by one over
 * each user's list of allowed sends, which is never shortened.
 *
 * <p>It knows nothing of how sendcap stores or batches sends: no eviction, no horizon, no Redis
 * layout, no shapes. Sends are decided one at a time in the order they are given, each against
 * every send allowed before it, whatever their times: under the event clock a send allowed later in
 * the input may lie earlier or later in time than the ones it is decided against.
 *
 * <p>Caps counted by another algorithm than the sliding log are outside it: {@link #decide} rejects
 * them.
 */
public final class ReferenceCaps {

  /**
   * A send to decide.
   *
   * @param userId the recipient
   * @param messageId the send's id; a send allowed under it before is a replay
   * @param channel the send's channel
   * @param now the decision time, epoch ms
   * @param transactional whether it bypasses the caps
   * @param userZone the user's time zone, or null for the policy's
   */
  public record Send(
      long userId,
      String messageId,
      Channel channel,
      long now,
      boolean transactional,
      ZoneId userZone) {}

  /** What became of a send. */
  public enum Outcome {
    /** Allowed; it now counts against the user's caps. */
    ALLOWED,
    /** Allowed again: its message id was allowed before, so it consumes nothing. */
    REPLAY,
    /** Allowed without a look at the caps, consuming nothing. */
    TRANSACTIONAL,
    /** Suppressed: a cap was full. */
    CAP,
    /** Suppressed: the user's newest send is too recent, and no cap was full. */
    MIN_INTERVAL
  }

  /**
   * The decision on one send.
   *
   * @param outcome what became of it
   * @param capIndex for {@link Outcome#CAP}, the index in the policy of the first full cap; else -1
   * @param cap for {@link Outcome#CAP}, that cap; else null
   * @param count for {@link Outcome#CAP}, the allowed sends inside that cap's window; else 0
   * @param nextEligibleAt for a suppression, the latest over the failing constraints of the time
   *     each stops failing; for an allowed send, its decision time
   */
  public record Verdict(Outcome outcome, int capIndex, Cap cap, int count, long nextEligibleAt) {
    /** Whether the send is delivered. */
    public boolean allowed() {
      return outcome == Outcome.ALLOWED
          || outcome == Outcome.REPLAY
          || outcome == Outcome.TRANSACTIONAL;
    }
  }

  /** A send the user was allowed, as later decisions see it. */
  private record Allowed(String messageId, Channel channel, long time) {}

  private final Map<Long, List<Allowed>> allowed = new HashMap<>();

  /**
   * Decides {@code send} under {@code policy} and, if it is allowed for the first time, adds it to
   * its user's allowed sends.
   *
   * <p>In this order: a transactional send is allowed and consumes nothing; a send whose message id
   * the user was allowed before is allowed again and consumes nothing; otherwise the send is
   * allowed iff every cap that applies to its channel holds fewer allowed sends than its limit and,
   * if the policy has a minimum interval, the user's newest allowed send is at least that interval
   * before {@code now}. A send both capped and too soon is reported as capped, naming the first
   * full cap in policy order.
   *
   * @throws IllegalArgumentException if a cap that applies is not a sliding log
   */
  public Verdict decide(Send send, Policy policy) {
    long now = send.now();
    if (send.transactional()) {
      return new Verdict(Outcome.TRANSACTIONAL, -1, null, 0, now);
    }
    List<Allowed> log = allowed.computeIfAbsent(send.userId(), u -> new ArrayList<>());
    for (Allowed a : log) {
      if (a.messageId().equals(send.messageId())) {
        return new Verdict(Outcome.REPLAY, -1, null, 0, now);
      }
    }
    ZoneId zone = send.userZone() != null ? send.userZone() : policy.zone();
    int firstFull = -1;
    int firstFullCount = 0;
    long next = now;
    for (int i = 0; i < policy.caps().size(); i++) {
      Cap cap = policy.caps().get(i);
      if (!applies(cap, send.channel())) {
        continue;
      }
      if (cap.algorithm() != Cap.Algorithm.SLIDING_LOG) {
        throw new IllegalArgumentException(
            "cap " + cap.name() + " is a " + cap.algorithm().key() + ", not a sliding log");
      }
      int count = count(cap, log, now, zone);
      if (count >= cap.limit()) {
        if (firstFull < 0) {
          firstFull = i;
          firstFullCount = count;
        }
        next = Math.max(next, holdsAgainAt(cap, log, now, zone));
      }
    }
    long interval = policy.minInterval().toMillis();
    boolean tooSoon = false;
    if (interval > 0 && !log.isEmpty()) {
      long newest = log.stream().mapToLong(Allowed::time).max().orElseThrow();
      if (now - newest < interval) {
        tooSoon = true;
        next = Math.max(next, newest + interval);
      }
    }
    if (firstFull >= 0) {
      return new Verdict(
          Outcome.CAP, firstFull, policy.caps().get(firstFull), firstFullCount, next);
    }
    if (tooSoon) {
      return new Verdict(Outcome.MIN_INTERVAL, -1, null, 0, next);
    }
    log.add(new Allowed(send.messageId(), send.channel(), now));
    return new Verdict(Outcome.ALLOWED, -1, null, 0, now);
  }

  /** Whether {@code cap} applies to a send on {@code channel}: it is for all or for that one. */
  private static boolean applies(Cap cap, Channel channel) {
    return cap.channel() == null || cap.channel() == channel;
  }

  /** The allowed sends that count against {@code cap} for a decision at {@code at}. */
  private static int count(Cap cap, List<Allowed> log, long at, ZoneId zone) {
    int n = 0;
    for (Allowed a : log) {
      if (applies(cap, a.channel()) && inWindow(cap, a.time(), at, zone)) {
        n++;
      }
    }
    return n;
  }

  /**
   * Whether a send allowed at {@code t} is inside {@code cap}'s window for a decision at {@code
   * at}: for a rolling window {@code w}, iff {@code t > at − w} (a send exactly one window old has
   * left it; one later than {@code at} is inside); for a calendar cap, iff {@code t} falls in the
   * same calendar day, ISO week or month as {@code at} in {@code zone}.
   */
  static boolean inWindow(Cap cap, long t, long at, ZoneId zone) {
    if (cap.kind() == Cap.Kind.ROLLING) {
      return t > at - cap.window().toMillis();
    }
    LocalDate day = date(t, zone);
    LocalDate today = date(at, zone);
    return switch (cap.kind()) {
      case CALENDAR_DAY -> day.equals(today);
      case CALENDAR_WEEK ->
          day.get(IsoFields.WEEK_BASED_YEAR) == today.get(IsoFields.WEEK_BASED_YEAR)
              && day.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR)
                  == today.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR);
      case CALENDAR_MONTH -> YearMonth.from(day).equals(YearMonth.from(today));
      case ROLLING -> throw new AssertionError();
    };
  }

  /**
   * The earliest time {@code T >= now} at which a full {@code cap} would hold a send again: for a
   * rolling window, the first {@code T} at which fewer than the limit of the allowed sends it
   * counts satisfy {@code t > T − w} (later ones included); for a calendar cap, the start of the
   * next period.
   */
  private static long holdsAgainAt(Cap cap, List<Allowed> log, long now, ZoneId zone) {
    if (cap.kind() != Cap.Kind.ROLLING) {
      return nextPeriodStart(cap.kind(), now, zone);
    }
    // The count only falls, and only at the instants t + w at which a counted send leaves.
    long w = cap.window().toMillis();
    long earliest = Long.MAX_VALUE;
    List<Long> candidates = new ArrayList<>();
    candidates.add(now);
    for (Allowed a : log) {
      if (applies(cap, a.channel()) && a.time() + w >= now) {
        candidates.add(a.time() + w);
      }
    }
    for (long at : candidates) {
      if (at < earliest && count(cap, log, at, zone) < cap.limit()) {
        earliest = at;
      }
    }
    return earliest;
  }

  /** The first instant of the calendar period after the one holding {@code at} in {@code zone}. */
  static long nextPeriodStart(Cap.Kind kind, long at, ZoneId zone) {
    LocalDate day = date(at, zone);
    LocalDate next =
        switch (kind) {
          case CALENDAR_DAY -> day.plusDays(1);
          case CALENDAR_WEEK -> day.with(TemporalAdjusters.next(DayOfWeek.MONDAY));
          case CALENDAR_MONTH -> day.with(TemporalAdjusters.firstDayOfNextMonth());
          case ROLLING -> throw new IllegalArgumentException("a rolling window has no period");
        };
    return next.atStartOfDay(zone).toInstant().toEpochMilli();
  }

  private static LocalDate date(long t, ZoneId zone) {
    return Instant.ofEpochMilli(t).atZone(zone).toLocalDate();
  }
}
