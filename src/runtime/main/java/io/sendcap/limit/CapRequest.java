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
 * @param timeFloor no send decided after this one has an earlier decision time: log entries that no
 *     decision at or after it can count are evicted (under the wall clock, {@code now}; under the
 *     event clock, out-of-order sends still admissible may come earlier than {@code now})
 * @param probe whether only to ask if the send is a replay: if it is not, it is neither checked nor
 *     logged (a send a global cap refused is delivered all the same if it is a replay)
 */
public record CapRequest(
    long userId,
    String messageId,
    long now,
    Policy policy,
    Channel channel,
    ZoneId zone,
    long timeFloor,
    boolean probe) {

  /** Creates a request for a send after which no send is decided at an earlier time. */
  public CapRequest(
      long userId, String messageId, long now, Policy policy, Channel channel, ZoneId zone) {
    this(userId, messageId, now, policy, channel, zone, now, false);
  }

  /** The same send, asking only whether it is a replay. */
  public CapRequest asProbe() {
    return new CapRequest(userId, messageId, now, policy, channel, zone, timeFloor, true);
  }

  /** Creates a request for an email in the policy's time zone. */
  public CapRequest(long userId, String messageId, long now, Policy policy) {
    this(userId, messageId, now, policy, Channel.EMAIL, null);
  }

  /** The zone calendar caps are counted in. */
  public ZoneId effectiveZone() {
    return zone != null ? zone : policy.zone();
  }
}
