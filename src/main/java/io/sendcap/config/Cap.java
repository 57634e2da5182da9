package io.sendcap.config;

import io.sendcap.avro.Channel;
import java.time.Duration;

/**
 * A frequency cap: at most {@code limit} sends to one user in a window, optionally counting only
 * the sends of one channel.
 *
 * @param name the window as written in the policy file, e.g. {@code 1d} or {@code calendar-week};
 *     reported in suppressions
 * @param kind a rolling window, or a calendar period in the user's time zone
 * @param window the rolling window; for a calendar period, the longest time it can span (a day
 *     across a daylight-saving change lasts 25 hours), which bounds how long sends are kept
 * @param limit the most sends allowed inside the window, at least 1
 * @param channel the only channel whose sends the cap counts and applies to, or null for all
 */
public record Cap(String name, Kind kind, Duration window, int limit, Channel channel) {

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

  /** Creates a cap, rejecting a non-positive window or limit. */
  public Cap {
    if (window.isNegative() || window.isZero() || limit < 1) {
      throw new IllegalArgumentException("cap " + name + " needs a positive window and limit");
    }
  }

  /** Creates a rolling cap over all channels. */
  public Cap(String name, Duration window, int limit) {
    this(name, Kind.ROLLING, window, limit, null);
  }

  /** Whether the cap applies to a send on {@code sendChannel}. */
  public boolean appliesTo(Channel sendChannel) {
    return channel == null || channel == sendChannel;
  }
}
