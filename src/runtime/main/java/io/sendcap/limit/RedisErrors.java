package io.sendcap.limit;

import java.util.Locale;
import javax.net.ssl.SSLException;

/**
 * Says in one sentence why Redis refused sendcap, naming the setting to check: a secured Redis
 * refuses with a reply (WRONGPASS, NOAUTH, NOPERM) or a failed TLS handshake, which the client
 * reports several causes deep under "Unable to connect".
 */
public final class RedisErrors {
  /** Where README lists the ACL rule sendcap's Redis user needs. */
  static final String ACL_HELP = "README, \"Running against a secured Redis\"";

  private RedisErrors() {}

  /** The reason of {@code error}: a refusal explained, or else the deepest cause's message. */
  public static String describe(Throwable error) {
    Throwable deepest = error;
    for (Throwable t = error; t != null; t = t.getCause()) {
      String message = t.getMessage() == null ? "" : t.getMessage();
      if (message.startsWith("WRONGPASS")) {
        return "Redis refused the user name and password of cap.redis.uri (" + message + ")";
      }
      if (message.startsWith("NOAUTH")) {
        return "Redis requires a user and password: cap.redis.uri=rediss://USER:PASSWORD@host:port"
            + " ("
            + message
            + ")";
      }
      if (message.startsWith("NOPERM")) {
        return "Redis's ACL refuses sendcap's user a command or key it needs: "
            + message
            + "; grant the rule of "
            + ACL_HELP;
      }
      if (t instanceof SSLException) {
        return tls(message);
      }
      deepest = t;
    }
    return deepest.getMessage() == null ? deepest.toString() : deepest.getMessage();
  }

  private static String tls(String message) {
    String lower = message.toLowerCase(Locale.ROOT);
    if (lower.contains("certification path") || lower.contains("pkix")) {
      return "Redis's TLS certificate is not trusted: set cap.redis.ssl.truststore.location to a"
          + " trust store holding the certificate of the CA that signed it ("
          + message
          + ")";
    }
    if (lower.contains("subject alternative name") || lower.contains("no name matching")) {
      return "Redis's TLS certificate does not name the host of cap.redis.uri (" + message + ")";
    }
    return "the TLS handshake with Redis failed: " + message;
  }
}
