package io.sendcap.limit;

import io.sendcap.avro.Channel;
import io.sendcap.config.Policy;
import java.time.ZoneId;

/**
 * One send to check against its user's policy.
 *
 * @param userId the recipient
 * @param messageId the send's unique id; a send already logged under it is not counted again
 * @param now the decision time in epoch milliseconds
 * @param policy the caps to check
 * @param channel the send's channel: caps scoped to another channel neither apply nor count it
 * @param zone the user's time zone for calendar caps, or null for the policy's zone
 */
public record CapRequest(
    long userId, String messageId, long now, Policy policy, Channel channel, ZoneId zone) {

  /** Creates a request for an email in the policy's time zone. */
  public CapRequest(long userId, String messageId, long now, Policy policy) {
    this(userId, messageId, now, policy, Channel.EMAIL, null);
  }

  /** The zone calendar caps are counted in. */
  public ZoneId effectiveZone() {
    return zone != null ? zone : policy.zone();
  }
}
