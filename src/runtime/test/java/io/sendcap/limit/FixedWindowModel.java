package io.sendcap.limit;

import io.sendcap.config.Cap;
import java.util.ArrayList;
import java.util.List;

/**
 * A fixed window as the list of buckets its sends were counted in. A bucket is a window-long span
 * aligned to the epoch; a send counts in the bucket of its time, or in the newest bucket already
 * counted in if that is later (the counter never goes back in time).
 */
final class FixedWindowModel implements CounterModel {
  private final List<Long> counted = new ArrayList<>();

  @Override
  public Verdict judge(Cap cap, long now) {
    long window = cap.window().toMillis();
    long bucket = Math.floorDiv(now, window);
    for (long b : counted) {
      bucket = Math.max(bucket, b);
    }
    long in = bucket;
    long count = counted.stream().filter(b -> b == in).count();
    return new Verdict(count, (bucket + 1) * window, () -> counted.add(in));
  }
}
