package io.sendcap.limit;

import io.sendcap.avro.Channel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Compact idempotency ids: the member under which a send is logged.
 *
 * <p>5 bytes: the send's channel in the top 3 bits (its ordinal + 1, so that channel-scoped caps
 * can count the sends of one channel), then 37 bits of the SHA-256 of the UTF-8 message id. Two
 * message ids of one user collide with probability about n<sup>2</sup>/2<sup>38</sup> for n sends
 * in the user's log (10<sup>-10</sup> for n = 5); a collision would report the second send as
 * already logged, delivering it without counting it. Never a timestamp: two sends in one
 * millisecond stay two entries. The score of the entry is the decision time.
 */
public final class MessageIds {
  /** The length of an idempotency id in bytes. */
  public static final int LENGTH = 5;

  private static final ThreadLocal<MessageDigest> SHA256 =
      ThreadLocal.withInitial(MessageIds::sha256);

  private MessageIds() {}

  /** Returns the idempotency id of a message id sent on {@code channel}. */
  public static byte[] member(String messageId, Channel channel) {
    byte[] digest = SHA256.get().digest(messageId.getBytes(StandardCharsets.UTF_8));
    byte[] member = new byte[LENGTH];
    System.arraycopy(digest, 0, member, 0, LENGTH);
    member[0] = (byte) ((channelCode(channel) << 5) | (digest[0] & 0x1f));
    return member;
  }

  /** The channel's code in the top 3 bits of a member's first byte: 1 to 7. */
  public static int channelCode(Channel channel) {
    if (channel.ordinal() >= 7) {
      throw new IllegalStateException("3 bits hold at most 7 channels: " + channel);
    }
    return channel.ordinal() + 1;
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime provides SHA-256", e);
    }
  }
}
