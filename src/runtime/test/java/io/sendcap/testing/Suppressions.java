package io.sendcap.testing;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import java.time.Instant;

/** Suppression records for report tests, with what a report reads set to chosen values. */
public final class Suppressions {
  private static int sequence;

  private Suppressions() {}

  /**
   * A suppression of a send of {@code campaign} on {@code channel} to a user of {@code segment},
   * decided at {@code decidedAt}; {@code capWindow} is used for reason CAP only.
   */
  public static Suppression of(
      String campaign,
      String segment,
      Channel channel,
      SuppressionReason reason,
      String capWindow,
      boolean shadow,
      Instant decidedAt) {
    ScheduledSend send =
        ScheduledSend.newBuilder()
            .setMessageId("m-" + sequence++)
            .setCampaignId(campaign)
            .setUserId(sequence)
            .setChannel(channel)
            .setScheduledAt(decidedAt)
            .build();
    boolean cap = reason == SuppressionReason.CAP;
    return Suppression.newBuilder()
        .setSend(send)
        .setSegment(segment)
        .setReason(reason)
        .setCapWindow(cap ? capWindow : null)
        .setCapWindowMs(cap ? 86_400_000L : null)
        .setCapLimit(cap ? 1 : null)
        .setCapCount(cap ? 1 : null)
        .setDecidedAt(decidedAt)
        .setNextEligibleAt(reason == SuppressionReason.LIMITER_UNAVAILABLE ? null : decidedAt)
        .setShadow(shadow)
        .build();
  }

  /**
   * A suppression of a send of {@code campaign} refused by the global cap {@code globalCap} (as the
   * record names it: the cap, then the campaign or channel it counts, if any).
   */
  public static Suppression global(
      String campaign, String segment, Channel channel, String globalCap, Instant decidedAt) {
    Suppression s =
        of(campaign, segment, channel, SuppressionReason.GLOBAL_CAP, null, false, decidedAt);
    s.setGlobalCap(globalCap);
    s.setCapWindow("1d");
    return s;
  }
}
