package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.Policies;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;

/**
 * Checks the values of a send that could be read, so that one sendcap cannot decide reaches the
 * dead-letter topic with the reason instead of stopping the pipeline.
 *
 * <p>Bytes that are not Avro, or Avro of a schema sendcap does not know or cannot resolve to its
 * own (an unknown channel, a missing messageId), fail earlier, in the deserializer.
 */
final class SendValidator {
  private final long maxSkewMs;
  private final boolean eventClock;

  /**
   * @param maxSkew how far {@code scheduledAt} may lie from the record's timestamp
   * @param eventClock whether decisions are made at {@code scheduledAt}: then a send may also lie
   *     no further than {@code maxSkew} behind the stream time, since the caps' logs keep only what
   *     such sends can count
   */
  SendValidator(Duration maxSkew, boolean eventClock) {
    this.maxSkewMs = maxSkew.toMillis();
    this.eventClock = eventClock;
  }

  /**
   * Checks one send.
   *
   * @param send the send, null for a record without a value
   * @param recordTimestamp the timestamp of the record that carried it
   * @param streamTime the newest record timestamp of the send's partition so far, its own included
   * @throws InvalidSendException naming the first invalid value
   */
  void check(ScheduledSend send, long recordTimestamp, long streamTime) {
    if (send == null) {
      throw new InvalidSendException("record has no value (a tombstone is not a send)");
    }
    if (send.getMessageId().isBlank()) {
      throw new InvalidSendException("messageId is empty");
    }
    if (send.getCampaignId().length() > Policies.MAX_CAMPAIGN_ID) {
      throw new InvalidSendException(
          "campaignId has "
              + send.getCampaignId().length()
              + " characters, more than "
              + Policies.MAX_CAMPAIGN_ID);
    }
    if (send.getUserId() < 0) {
      throw new InvalidSendException("userId " + send.getUserId() + " is negative");
    }
    if (send.getUserTimeZone() != null && !isZone(send.getUserTimeZone())) {
      throw new InvalidSendException(
          "userTimeZone \"" + send.getUserTimeZone() + "\" is not a time zone id");
    }
    long scheduledAt = send.getScheduledAt().toEpochMilli();
    if (scheduledAt > recordTimestamp + maxSkewMs || scheduledAt < recordTimestamp - maxSkewMs) {
      throw new InvalidSendException(
          "scheduledAt "
              + send.getScheduledAt()
              + " is more than cap.max-skew.ms="
              + maxSkewMs
              + " from the record's timestamp "
              + Instant.ofEpochMilli(recordTimestamp));
    }
    if (eventClock && scheduledAt < streamTime - maxSkewMs) {
      throw new InvalidSendException(
          "scheduledAt "
              + send.getScheduledAt()
              + " is more than cap.max-skew.ms="
              + maxSkewMs
              + " behind the partition's stream time "
              + Instant.ofEpochMilli(streamTime)
              + " (its newest record timestamp): under cap.clock=event the caps' logs no longer"
              + " hold every send it must count");
    }
  }

  private static boolean isZone(String id) {
    try {
      ZoneId.of(id);
      return true;
    } catch (DateTimeException e) {
      return false;
    }
  }
}
