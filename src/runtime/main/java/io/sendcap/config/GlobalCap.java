package io.sendcap.config;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import java.time.Duration;

/**
 * A limit on sends across users: per campaign, per channel or across everything, in fixed windows
 * aligned to the epoch (a {@code 1d} window is a UTC day, {@code 1s} a second). It is checked after
 * a send's per-user caps and before the send is allowed; a send the per-user caps refuse consumes
 * none of it.
 *
 * @param name the cap's name, unique in the policy file
 * @param per what it counts separately: every campaign, every channel, or all sends together
 * @param channel when set, only sends of this channel count and are limited
 * @param campaign when set, only sends of this campaign count and are limited
 * @param windowName the window as written in the policy file
 * @param window the window's length
 * @param limit the most sends allowed in one window
 * @param maxBatch the most tokens one instance reserves from Redis in one call
 */
public record GlobalCap(
    String name,
    Per per,
    Channel channel,
    String campaign,
    String windowName,
    Duration window,
    long limit,
    int maxBatch) {

  /** What a global cap counts separately. */
  public enum Per {
    /** All sends it applies to together. */
    ALL,
    /** Each campaign separately. */
    CAMPAIGN,
    /** Each channel separately. */
    CHANNEL
  }

  /** Whether {@code send} counts against this cap. */
  public boolean appliesTo(ScheduledSend send) {
    return (channel == null || channel == send.getChannel())
        && (campaign == null || campaign.equals(send.getCampaignId()));
  }

  /** Which counter of this cap {@code send} counts in: its campaign, its channel, or "all". */
  public String scopeOf(ScheduledSend send) {
    return switch (per) {
      case ALL -> "all";
      case CAMPAIGN -> send.getCampaignId();
      case CHANNEL -> send.getChannel().name();
    };
  }
}
