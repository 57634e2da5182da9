package io.sendcap.limit;

import io.sendcap.avro.Channel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Deque;
import java.util.concurrent.ConcurrentLinkedDeque;

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

  /**
   * SHA-256 digests, lent to one thread at a time and kept across threads, so that a stream thread
   * started later (one Kafka Streams starts in place of a failed one, or a new instance's in the
   * same JVM) reuses a digest that earlier threads used: a digest used only from compiled code
   * never allocates the array that the JDK's SHA-256 reset tests for null ({@code SHA2.implReset},
   * whose compress method is a C2 intrinsic), and the first reset of such a digest throws away the
   * compiled code it is inlined into, the call builder's.
   */
  private static final Deque<MessageDigest> DIGESTS = new ConcurrentLinkedDeque<>();

  private MessageIds() {}

  /** Lends a SHA-256 digest to the calling thread until it gives it back. */
  static MessageDigest borrowDigest() {
    MessageDigest sha256 = DIGESTS.pollFirst();
    return sha256 != null ? sha256 : sha256();
  }

  /** Takes back a digest from {@link #borrowDigest()}, the next to be lent, to any thread. */
  static void giveBack(MessageDigest sha256) {
    DIGESTS.offerFirst(sha256);
  }

  /**
   * Returns the idempotency id of a message id sent on {@code channel}, computed with {@code
   * sha256}, a digest the calling thread has borrowed.
   */
  static byte[] member(String messageId, Channel channel, MessageDigest sha256) {
    byte[] digest = sha256.digest(messageId.getBytes(StandardCharsets.UTF_8));
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
