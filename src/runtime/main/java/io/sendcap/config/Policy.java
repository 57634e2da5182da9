package io.sendcap.config;

import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.List;

/**
 * The caps that apply to the users of one segment.
 *
 * @param segment the segment's name, or {@code default} for users in no segment
 * @param caps the caps, in the order they are checked and reported
 * @param minInterval the least time between two sends to one user; {@link Duration#ZERO} for none
 * @param zone the time zone of calendar caps for sends that do not name the user's zone
 */
public record Policy(String segment, List<Cap> caps, Duration minInterval, ZoneId zone) {
  /** The name of the policy for users in no segment. */
  public static final String DEFAULT = "default";

  /** Creates a policy; the list of caps is copied. */
  public Policy {
    caps = List.copyOf(caps);
  }

  /** Creates a policy whose calendar caps count in UTC. */
  public Policy(String segment, List<Cap> caps, Duration minInterval) {
    this(segment, caps, minInterval, ZoneOffset.UTC);
  }

  /**
   * How long the policy's state is kept after a send: the longest of its {@link #logHorizon()} and
   * its caps' {@link Cap#stateLifetime()}s. For a policy of sliding logs only, its longest window
   * or its minimum interval.
   */
  public Duration horizon() {
    Duration longest = logHorizon();
    for (Cap cap : caps) {
      if (cap.stateLifetime().compareTo(longest) > 0) {
        longest = cap.stateLifetime();
      }
    }
    return longest;
  }

  /**
   * The longest span the user's log of sends is looked back over: the windows of the sliding-log
   * caps and the minimum interval. Caps of the other algorithms keep counters instead.
   */
  public Duration logHorizon() {
    Duration longest = minInterval;
    for (Cap cap : caps) {
      if (cap.countsTheLog() && cap.window().compareTo(longest) > 0) {
        longest = cap.window();
      }
    }
    return longest;
  }
}
