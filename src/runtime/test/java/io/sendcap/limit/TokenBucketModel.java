package io.sendcap.limit;

import io.sendcap.config.Cap;

/**
 * A token bucket as the continuous-state leaky bucket, the textbook twin of GCRA's virtual
 * scheduling that the script runs: the bucket holds {@code level} ms of emission intervals, drains
 * one ms per ms since the last send it let through, and takes a send iff, drained, it holds at most
 * {@code (limit − 1)} intervals; each send adds one interval (the window divided by the limit,
 * rounded up to the ms).
 */
final class TokenBucketModel implements CounterModel {
  private long level;
  private long lastSend;

  @Override
  public Verdict judge(Cap cap, long now) {
    long interval = cap.emissionIntervalMs();
    long tolerance = (cap.limit() - 1) * interval;
    long drained = Math.max(0, level - (now - lastSend));
    long count = (drained + interval - 1) / interval;
    long releasedAt = Math.max(now, lastSend + level - tolerance);
    return new Verdict(
        count,
        releasedAt,
        () -> {
          level = drained + interval;
          lastSend = now;
        });
  }
}
