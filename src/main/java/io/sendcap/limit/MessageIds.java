package io.sendcap.limit;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * Compact idempotency ids: the member under which a send is logged.
 *
 * <p>The id is the first 8 bytes of the SHA-256 of the UTF-8 message id. Two different message ids
 * of one user collide with probability about n<sup>2</sup>/2<sup>65</sup> for n sends in the user's
 * log (below 10<sup>-16</sup> for n = 50); a collision would report the second send as already
 * logged. Never a timestamp: two sends in one millisecond stay two entries.
 */
public final class MessageIds {
  /** The length of an idempotency id in bytes. */
  public static final int LENGTH = 8;

  private static final ThreadLocal<MessageDigest> SHA256 =
      ThreadLocal.withInitial(MessageIds::sha256);

  private MessageIds() {}

  /** Returns the idempotency id of a message id. */
  public static byte[] member(String messageId) {
    byte[] digest = SHA256.get().digest(messageId.getBytes(StandardCharsets.UTF_8));
    return Arrays.copyOf(digest, LENGTH);
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime provides SHA-256", e);
    }
  }
}
