package io.sendcap.config;

import io.sendcap.avro.Channel;
import java.time.Duration;
import java.util.Arrays;
import java.util.Optional;

/**
 * A frequency cap: at most {@code limit} sends to one user in a window, optionally counting only
 * the sends of one channel, enforced by one of the rate-limiting {@link Algorithm}s.
 *
 * @param name the window as written in the policy file, e.g. {@code 1d} or {@code calendar-week};
 *     reported in suppressions
 * @param kind a rolling window, or a calendar period in the user's time zone
 * @param window the rolling window; for a calendar period, the longest time it can span (a day
 *     across a daylight-saving change lasts 25 hours), which bounds how long sends are kept
 * @param limit the most sends allowed inside the window, at least 1
 * @param channel the only channel whose sends the cap counts and applies to, or null for all
 * @param algorithm how the sends inside the window are counted; a calendar cap is always a {@link
 *     Algorithm#SLIDING_LOG}
 */
public record Cap(
    String name, Kind kind, Duration window, int limit, Channel channel, Algorithm algorithm) {

  /**
   * The largest {@code limit × window in ms} of a sliding-window cap: its weighted count is worked
   * out in the doubles of Redis's Lua, exact for whole numbers below 2<sup>53</sup>, and this
   * leaves room for the sums.
   */
  public static final long MAX_SLIDING_WINDOW_PRODUCT = 1L << 50;

  /** How a cap's window is placed in time. */
  public enum Kind {
    /** The window ends at the decision time: a send at t counts iff t > now − window. */
    ROLLING,
    /** The calendar day of the decision time in the user's zone. */
    CALENDAR_DAY,
    /** The ISO calendar week (Monday to Sunday) of the decision time in the user's zone. */
    CALENDAR_WEEK,
    /** The calendar month of the decision time in the user's zone. */
    CALENDAR_MONTH
  }

  /** How a cap counts the sends in its window; the README compares their costs and errors. */
  public enum Algorithm {
    /** The exact log of the user's sends: counts every logged send inside the window. */
    SLIDING_LOG("sliding-log"),
    /**
     * Sliding-window counter: one counter per window-long bucket aligned to the epoch; the count is
     * the current bucket's plus the previous bucket's weighted by how much of it the window still
     * covers.
     */
    SLIDING_WINDOW("sliding-window"),
    /**
     * One counter per window-long bucket aligned to the epoch; it starts again at 0 in the next.
     */
    FIXED_WINDOW("fixed-window"),
    /**
     * Token bucket as GCRA: one theoretical arrival time; {@code limit} per {@code window} as the
     * rate and a burst of {@code limit}.
     */
    TOKEN_BUCKET("token-bucket");

    private final String key;

    Algorithm(String key) {
      this.key = key;
    }

    /** The algorithm's name in the policy file, e.g. {@code sliding-window}. */
    public String key() {
      return key;
    }

    /** The algorithm named {@code key} in the policy file, if there is one. */
    public static Optional<Algorithm> of(String key) {
      return Arrays.stream(values()).filter(a -> a.key.equals(key)).findFirst();
    }
  }

  /**
   * Creates a cap, rejecting a non-positive window or limit, an algorithm other than the sliding
   * log on a calendar period, and a limit above {@link #maxLimit}.
   */
  public Cap {
    if (window.isNegative() || window.isZero() || limit < 1) {
      throw new IllegalArgumentException("cap " + name + " needs a positive window and limit");
    }
    if (algorithm == null) {
      throw new IllegalArgumentException("cap " + name + " needs an algorithm");
    }
    if (kind != Kind.ROLLING && algorithm != Algorithm.SLIDING_LOG) {
      throw new IllegalArgumentException(
          "cap "
              + name
              + ": a calendar period is counted by sliding-log only, not "
              + algorithm.key());
    }
    if (limit > maxLimit(algorithm, window)) {
      throw new IllegalArgumentException(
          "cap "
              + name
              + ": a "
              + algorithm.key()
              + " limit is at most "
              + maxLimit(algorithm, window));
    }
  }

  /** Creates a sliding-log cap. */
  public Cap(String name, Kind kind, Duration window, int limit, Channel channel) {
    this(name, kind, window, limit, channel, Algorithm.SLIDING_LOG);
  }

  /** Creates a rolling sliding-log cap over all channels. */
  public Cap(String name, Duration window, int limit) {
    this(name, Kind.ROLLING, window, limit, null, Algorithm.SLIDING_LOG);
  }

  /** Creates a rolling cap over all channels counted by {@code algorithm}. */
  public Cap(String name, Duration window, int limit, Algorithm algorithm) {
    this(name, Kind.ROLLING, window, limit, null, algorithm);
  }

  /**
   * The largest limit a cap of {@code algorithm} over {@code window} may have. A fixed or sliding
   * window keeps its count beside its bucket's start time in one number (its count stays below the
   * window in ms), and a sliding window's weighted count needs limit × window at most {@link
   * #MAX_SLIDING_WINDOW_PRODUCT}; the others are bounded by {@code int} only.
   */
  public static long maxLimit(Algorithm algorithm, Duration window) {
    long ms = Math.max(1, window.toMillis());
    return switch (algorithm) {
      case SLIDING_LOG, TOKEN_BUCKET -> Integer.MAX_VALUE;
      case FIXED_WINDOW -> ms - 1;
      case SLIDING_WINDOW -> Math.min(ms - 1, MAX_SLIDING_WINDOW_PRODUCT / ms);
    };
  }

  /** Whether the cap applies to a send on {@code sendChannel}. */
  public boolean appliesTo(Channel sendChannel) {
    return channel == null || channel == sendChannel;
  }

  /** Whether the cap is counted from the user's log of sends rather than a counter of its own. */
  public boolean countsTheLog() {
    return algorithm == Algorithm.SLIDING_LOG;
  }

  /**
   * The token bucket's emission interval in ms: the window divided by the limit, rounded up to the
   * millisecond, so that the rate never exceeds {@code limit} per {@code window}.
   */
  public long emissionIntervalMs() {
    long w = window.toMillis();
    return (w + limit - 1) / limit;
  }

  /**
   * How long after a send the cap's state still matters: the window for a sliding log or a fixed
   * window, two windows for a sliding-window counter (the current bucket and the one that weighs on
   * the next), and the time a full token bucket takes to empty.
   */
  public Duration stateLifetime() {
    return switch (algorithm) {
      case SLIDING_LOG, FIXED_WINDOW -> window;
      case SLIDING_WINDOW -> window.multipliedBy(2);
      case TOKEN_BUCKET -> Duration.ofMillis(emissionIntervalMs() * limit);
    };
  }
}
