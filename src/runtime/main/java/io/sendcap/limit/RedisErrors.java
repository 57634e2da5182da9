package io.sendcap.limit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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

  private static final List<String> REFUSALS = List.of("WRONGPASS", "NOAUTH", "NOPERM");

  private RedisErrors() {}

  /** The reason of {@code error}: a refusal explained, or else the deepest cause's message. */
  public static String describe(Throwable error) {
    Throwable deepest = error;
    for (Throwable t = error; t != null; t = t.getCause()) {
      String refusal = refusal(t);
      if (refusal.startsWith("WRONGPASS")) {
        return "Redis refused the user name and password of cap.redis.uri (" + refusal + ")";
      }
      if (refusal.startsWith("NOAUTH")) {
        return "Redis requires a user and password: cap.redis.uri=rediss://USER:PASSWORD@host:port"
            + " ("
            + refusal
            + ")";
      }
      if (refusal.startsWith("NOPERM")) {
        return "Redis's ACL refuses sendcap's user a command or key it needs: "
            + refusal
            + "; grant the rule of "
            + ACL_HELP;
      }
      if (t instanceof SSLException) {
        return tls(t.getMessage() == null ? "" : t.getMessage());
      }
      deepest = t;
    }
    return deepest.getMessage() == null ? deepest.toString() : deepest.getMessage();
  }

  /**
   * Redis's refusal reply in {@code t}'s message or those of its suppressed exceptions, up to the
   * end of its line, or "" if none: a cluster client reports each seed node's reply on a line of
   * its own ("Cannot retrieve cluster partitions from ...").
   */
  private static String refusal(Throwable t) {
    List<Throwable> all = new ArrayList<>(List.of(t));
    all.addAll(Arrays.asList(t.getSuppressed()));
    for (Throwable e : all) {
      String message = e.getMessage() == null ? "" : e.getMessage();
      for (String reply : REFUSALS) {
        int at = message.indexOf(reply);
        if (at >= 0) {
          int end = message.indexOf('\n', at);
          return message.substring(at, end < 0 ? message.length() : end).strip();
        }
      }
    }
    return "";
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
