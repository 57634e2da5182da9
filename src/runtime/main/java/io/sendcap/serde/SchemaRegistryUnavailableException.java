package io.sendcap.serde;

import org.apache.kafka.common.KafkaException;

/**
 * The failure of a schema registry request that no configured URL answered: every one refused the
 * connection, timed out or answered with a server error (5xx).
 *
 * <p>Unlike {@link SchemaRegistryException}, this says nothing about the record being read or
 * written: the same record succeeds once the registry is back. The message names every URL tried
 * and why each failed, never credentials. A {@link SchemaRegistryConfigurationException} is one
 * whose cause is a setting, not the registry's health.
 */
public class SchemaRegistryUnavailableException extends KafkaException {
  SchemaRegistryUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
