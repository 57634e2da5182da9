package io.sendcap.limit;

import io.sendcap.avro.Channel;
import io.sendcap.config.CalendarPeriods;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A plain Java model of the rules of DESIGN.md, written for clarity rather than speed: the
 * reference the Lua script is compared with. Every user has a log of the sends allowed to them
 * (their times, and their ids for replays), which sliding-log caps count; caps of the other
 * algorithms count with a {@link CounterModel} per user and counter identity. Log entries older
 * than the horizon (the sliding-log windows, the minimum interval, at least the retention) before
 * the request's time floor are evicted when a send is logged; until then they still identify a
 * replay.
 */
public final class SlidingLogModel implements CapStore {
  private record Entry(long time, Channel channel) {}

  /**
   * What a counter's state belongs to: caps of one algorithm, window and channel count the same
   * sends; a token bucket's state is also measured in its limit's emission intervals.
   */
  private record CounterId(
      long user, Cap.Algorithm algorithm, Duration window, Channel channel, int limit) {
    static CounterId of(long user, Cap cap) {
      int limit = cap.algorithm() == Cap.Algorithm.TOKEN_BUCKET ? cap.limit() : 0;
      return new CounterId(user, cap.algorithm(), cap.window(), cap.channel(), limit);
    }
  }

  private final Map<Long, Map<String, Entry>> logs = new HashMap<>();
  private final Map<CounterId, CounterModel> counters = new HashMap<>();
  private final long retentionMs;

  /** A model that keeps each logged send for at least {@code retention}. */
  public SlidingLogModel(Duration retention) {
    this.retentionMs = retention.toMillis();
  }

  @Override
  public Pending submit(List<CapRequest> requests) {
    List<Decision> decisions = new ArrayList<>();
    for (CapRequest r : requests) {
      decisions.add(decide(r));
    }
    return () -> decisions;
  }

  /** Decides one send. */
  public Decision decide(CapRequest r) {
    Map<String, Entry> log = logs.computeIfAbsent(r.userId(), u -> new HashMap<>());
    String id = r.channel() + "/" + r.messageId();
    long now = r.now();
    if (log.containsKey(id)) {
      return new Decision(Decision.Outcome.DUPLICATE, -1, 0, now);
    }
    if (r.probe()) {
      return new Decision(Decision.Outcome.NOT_A_REPLAY, -1, 0, now);
    }
    Policy policy = r.policy();
    List<Entry> entries =
        log.values().stream().sorted(Comparator.comparingLong(Entry::time)).toList();
    int failed = -1;
    int failedCount = 0;
    long next = now;
    Map<CounterId, Runnable> charges = new HashMap<>();
    for (int i = 0; i < policy.caps().size(); i++) {
      Cap cap = policy.caps().get(i);
      if (!cap.appliesTo(r.channel())) {
        continue;
      }
      long count;
      long releasedAt;
      if (cap.countsTheLog()) {
        List<Long> inside = inside(cap, entries, r);
        count = inside.size();
        releasedAt = count >= cap.limit() ? release(cap, inside, r) : now;
      } else {
        CounterId counter = CounterId.of(r.userId(), cap);
        CounterModel.Verdict verdict =
            counters
                .computeIfAbsent(counter, k -> CounterModel.of(cap.algorithm()))
                .judge(cap, now);
        count = verdict.count();
        releasedAt = verdict.releasedAt();
        charges.putIfAbsent(counter, verdict.charge());
      }
      if (count >= cap.limit()) {
        if (failed < 0) {
          failed = i;
          failedCount = Math.toIntExact(count);
        }
        next = Math.max(next, releasedAt);
      }
    }
    long interval = policy.minInterval().toMillis();
    boolean tooSoon = false;
    if (interval > 0 && !entries.isEmpty()) {
      long newest = entries.get(entries.size() - 1).time();
      if (newest > now - interval) {
        tooSoon = true;
        next = Math.max(next, newest + interval);
      }
    }
    if (failed >= 0) {
      return new Decision(Decision.Outcome.CAPPED, failed, failedCount, next);
    }
    if (tooSoon) {
      return new Decision(Decision.Outcome.MIN_INTERVAL, -1, 0, next);
    }
    long horizon = Math.max(policy.logHorizon().toMillis(), retentionMs);
    log.values().removeIf(e -> e.time() <= r.timeFloor() - horizon);
    log.put(id, new Entry(now, r.channel()));
    charges.values().forEach(Runnable::run);
    return new Decision(Decision.Outcome.ALLOWED, -1, 0, now);
  }

  /** The times, oldest first, of the logged sends that count against {@code cap}. */
  private static List<Long> inside(Cap cap, List<Entry> entries, CapRequest r) {
    long now = r.now();
    CalendarPeriods.Period period =
        cap.kind() == Cap.Kind.ROLLING
            ? null
            : CalendarPeriods.of(cap.kind(), Instant.ofEpochMilli(now), r.effectiveZone());
    return entries.stream()
        .filter(e -> cap.channel() == null || cap.channel() == e.channel())
        .filter(
            e ->
                period == null
                    ? e.time() > now - cap.window().toMillis()
                    : e.time() >= period.start() && e.time() < period.end())
        .map(Entry::time)
        .toList();
  }

  /** When enough counted sends have left the cap's window for one more to fit. */
  private static long release(Cap cap, List<Long> inside, CapRequest r) {
    if (cap.kind() != Cap.Kind.ROLLING) {
      return CalendarPeriods.of(cap.kind(), Instant.ofEpochMilli(r.now()), r.effectiveZone()).end();
    }
    return inside.get(inside.size() - cap.limit()) + cap.window().toMillis();
  }

  /** The number of sends logged for a user. */
  public int logged(long userId) {
    return logs.getOrDefault(userId, Map.of()).size();
  }

  @Override
  public void close() {}
}
