package io.sendcap.limit;

import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A plain Java model of the sliding-log rules of DESIGN.md, written for clarity rather than speed:
 * the reference the Lua script is compared with.
 */
public final class SlidingLogModel implements CapStore {
  private final Map<Long, Map<String, Long>> logs = new HashMap<>();
  private final long retentionMs;

  /** A model that keeps each logged send for at least {@code retention}. */
  public SlidingLogModel(Duration retention) {
    this.retentionMs = retention.toMillis();
  }

  @Override
  public List<Decision> decide(List<CapRequest> requests) {
    List<Decision> decisions = new ArrayList<>();
    for (CapRequest r : requests) {
      decisions.add(decide(r));
    }
    return decisions;
  }

  /** Decides one send. */
  public Decision decide(CapRequest r) {
    Map<String, Long> log = logs.computeIfAbsent(r.userId(), u -> new HashMap<>());
    if (log.containsKey(r.messageId())) {
      return new Decision(Decision.Outcome.DUPLICATE, -1, 0, r.now());
    }
    Policy policy = r.policy();
    long now = r.now();
    long horizon = Math.max(policy.horizon().toMillis(), retentionMs);
    log.values().removeIf(t -> t <= now - horizon);
    List<Long> times = log.values().stream().sorted().toList();
    int failed = -1;
    int failedCount = 0;
    long next = now;
    for (int i = 0; i < policy.caps().size(); i++) {
      Cap cap = policy.caps().get(i);
      long w = cap.window().toMillis();
      List<Long> inside = times.stream().filter(t -> t > now - w).toList();
      if (inside.size() >= cap.limit()) {
        if (failed < 0) {
          failed = i;
          failedCount = inside.size();
        }
        next = Math.max(next, inside.get(inside.size() - cap.limit()) + w);
      }
    }
    long interval = policy.minInterval().toMillis();
    boolean tooSoon = false;
    if (interval > 0 && !times.isEmpty() && times.get(times.size() - 1) > now - interval) {
      tooSoon = true;
      next = Math.max(next, times.get(times.size() - 1) + interval);
    }
    if (failed >= 0) {
      return new Decision(Decision.Outcome.CAPPED, failed, failedCount, next);
    }
    if (tooSoon) {
      return new Decision(Decision.Outcome.MIN_INTERVAL, -1, 0, next);
    }
    log.put(r.messageId(), now);
    return new Decision(Decision.Outcome.ALLOWED, -1, 0, now);
  }

  /** The number of sends logged for a user. */
  public int logged(long userId) {
    return logs.getOrDefault(userId, Map.of()).size();
  }

  @Override
  public void close() {}
}
