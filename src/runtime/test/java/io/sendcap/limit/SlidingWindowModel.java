package io.sendcap.limit;

import io.sendcap.config.Cap;
import java.util.ArrayList;
import java.util.List;

/**
 * A sliding-window counter as the list of buckets its sends were counted in (as {@link
 * FixedWindowModel} counts them). Its count at time T is the sends of T's bucket plus those of the
 * bucket before, weighted by the share of that bucket the window (T − window, T] still covers; its
 * release time is found by bisection over T, the count never growing with T.
 */
final class SlidingWindowModel implements CounterModel {
  private final List<Long> counted = new ArrayList<>();

  @Override
  public Verdict judge(Cap cap, long now) {
    long window = cap.window().toMillis();
    long full = cap.limit() * window;
    long bucket = bucket(now, window);
    long weighted = weighted(now, window);
    long releasedAt = now;
    if (weighted >= full) {
      long lo = now;
      long hi = (bucket + 2) * window;
      while (hi - lo > 1) {
        long mid = lo + (hi - lo) / 2;
        if (weighted(mid, window) >= full) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
      releasedAt = hi;
    }
    return new Verdict(weighted / window, releasedAt, () -> counted.add(bucket));
  }

  private long bucket(long t, long window) {
    long bucket = Math.floorDiv(t, window);
    for (long b : counted) {
      bucket = Math.max(bucket, b);
    }
    return bucket;
  }

  /** The count at {@code t} times the window, a whole number. */
  private long weighted(long t, long window) {
    long bucket = bucket(t, window);
    long current = counted.stream().filter(b -> b == bucket).count();
    long previous = counted.stream().filter(b -> b == bucket - 1).count();
    long elapsed = Math.max(0, t - bucket * window);
    return previous * (window - elapsed) + current * window;
  }
}
