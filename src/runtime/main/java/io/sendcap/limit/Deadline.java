package io.sendcap.limit;

import java.time.Duration;

/**
 * The time by which Redis must have answered every call made for one batch: the batch's token
 * reservations, its per-user call with a NOSCRIPT reload and retry, and its second chance share it,
 * so that a batch holds its stream thread for at most {@code cap.redis.timeout.ms} in all.
 */
public final class Deadline {
  /** No deadline beyond each call's own timeout. */
  public static final Deadline NONE = new Deadline(Long.MAX_VALUE);

  private final long nanoTime;

  private Deadline(long nanoTime) {
    this.nanoTime = nanoTime;
  }

  /** The deadline {@code budget} from now. */
  public static Deadline in(Duration budget) {
    return new Deadline(System.nanoTime() + budget.toNanos());
  }

  /** Whether the deadline has passed. */
  public boolean passed() {
    return nanoTime != Long.MAX_VALUE && System.nanoTime() - nanoTime >= 0;
  }

  /**
   * How long is left of {@code timeout} before this deadline: at most {@code timeout}, never
   * negative.
   */
  public long remainingMillis(Duration timeout) {
    if (nanoTime == Long.MAX_VALUE) {
      return timeout.toMillis();
    }
    long left = Math.max(0, (nanoTime - System.nanoTime()) / 1_000_000);
    return Math.min(timeout.toMillis(), left);
  }
}
