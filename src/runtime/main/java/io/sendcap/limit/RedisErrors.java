package io.sendcap.limit;

import io.lettuce.core.RedisCommandExecutionException;
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

  /** What an error of Redis means for the batch it failed. */
  public enum Kind {
    /** Redis cannot be reached or cannot serve now: the batch waits for it. */
    OUTAGE,
    /** A cluster slot is moving: the call is sent again within the batch's deadline. */
    RETRY,
    /** One key holds what sendcap did not write: the sends of its user cannot be decided. */
    KEY,
    /** Redis answers and refuses: a configuration or capacity error for an operator to fix. */
    REFUSAL
  }

  /**
   * What {@code error} means for the batch it failed, from the first error reply of Redis among its
   * causes: TRYAGAIN, ASK and MOVED (a slot moving, which Lettuce does not retry or retried too
   * often) a retry; WRONGTYPE a key's; LOADING, BUSY, CLUSTERDOWN, MASTERDOWN and READONLY (a
   * failover under way) an outage, as a lost connection or a timeout is; any other reply (NOPERM,
   * NOAUTH, WRONGPASS, OOM, MISCONF, a script's error) a refusal: Redis answers, and answers no.
   */
  public static Kind kind(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (!refusal(t).isEmpty()) {
        return Kind.REFUSAL;
      }
      if (t instanceof RedisCommandExecutionException && t.getMessage() != null) {
        return kindOfReply(t.getMessage());
      }
    }
    return Kind.OUTAGE;
  }

  /**
   * The exception for {@code message} failed by {@code cause}: a {@link LimiterRefusedException} if
   * Redis refused ({@link Kind#REFUSAL}) or a key failed the whole call ({@link Kind#KEY}: a key of
   * every user's, such as a global cap's counter, that another application wrote; one user's log is
   * reported per send instead), a {@link LimiterUnavailableException} otherwise.
   */
  static LimiterUnavailableException failed(String message, Throwable cause) {
    return failed(message, cause, List.of());
  }

  /** As {@link #failed(String, Throwable)}, with the decisions made all the same. */
  static LimiterUnavailableException failed(
      String message, Throwable cause, List<Decision> decided) {
    Kind kind = kind(cause);
    return kind == Kind.REFUSAL || kind == Kind.KEY
        ? new LimiterRefusedException(message, cause, decided)
        : new LimiterUnavailableException(message, cause, decided);
  }

  /** What an error reply of Redis, its code first, means for the batch it failed. */
  static Kind kindOfReply(String reply) {
    int space = reply.indexOf(' ');
    String code = space < 0 ? reply : reply.substring(0, space);
    return switch (code) {
      case "TRYAGAIN", "ASK", "MOVED" -> Kind.RETRY;
      case "WRONGTYPE" -> Kind.KEY;
      case "LOADING", "BUSY", "CLUSTERDOWN", "MASTERDOWN", "READONLY" -> Kind.OUTAGE;
      default -> Kind.REFUSAL;
    };
  }

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
