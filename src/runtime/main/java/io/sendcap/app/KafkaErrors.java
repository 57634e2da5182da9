package io.sendcap.app;

import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;

/**
 * Says in one sentence why a secured Kafka cluster refused sendcap, naming the setting or the ACL
 * to check: the clients report a refusal as an exception a few causes deep, and a tool that read it
 * as "cannot reach Kafka" would send an operator to the network instead of the credentials.
 */
public final class KafkaErrors {
  /** Where README lists the ACLs sendcap's principal needs. */
  public static final String ACL_HELP =
      "grant the ACLs of README, \"Running against a secured Kafka cluster\"";

  private KafkaErrors() {}

  /** The refusal behind {@code error}, explained, if it is one; else null. */
  public static String refusal(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof SaslAuthenticationException) {
        return "Kafka refused the credentials of sasl.jaas.config (and sasl.mechanism): "
            + t.getMessage();
      }
      if (t instanceof SslAuthenticationException) {
        return "the TLS handshake with Kafka failed; if the brokers' certificate is not one the"
            + " JDK trusts, set ssl.truststore.location: "
            + deepest(t).getMessage();
      }
      if (t instanceof AuthorizationException) {
        return "Kafka's ACLs refuse this principal: " + t.getMessage() + "; " + ACL_HELP;
      }
    }
    return null;
  }

  private static Throwable deepest(Throwable t) {
    Throwable d = t;
    while (d.getCause() != null && d.getCause() != d) {
      d = d.getCause();
    }
    return d;
  }
}
