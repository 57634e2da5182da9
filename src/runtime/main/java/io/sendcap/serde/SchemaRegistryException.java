package io.sendcap.serde;

import org.apache.kafka.common.KafkaException;

/**
 * An answer of a schema registry that sendcap cannot use: an error, with its HTTP status and the
 * {@code error_code} and {@code message} of the registry's JSON body (for example 404, 40403,
 * "Schema not found"), or a schema that is not one sendcap can read (HTTP status 200, error code
 * 0).
 *
 * <p>The message names the URL and the request, never credentials.
 */
public final class SchemaRegistryException extends KafkaException {
  /** The registry's {@code error_code} for a subject that does not exist. */
  public static final int SUBJECT_NOT_FOUND = 40401;

  /** The registry's {@code error_code} for a schema (or schema id) that does not exist. */
  public static final int SCHEMA_NOT_FOUND = 40403;

  private final int status;
  private final int errorCode;

  SchemaRegistryException(String message, int status, int errorCode) {
    super(message);
    this.status = status;
    this.errorCode = errorCode;
  }

  /** The HTTP status of the answer. */
  public int status() {
    return status;
  }

  /**
   * The registry's {@code error_code}; the HTTP status when the body had none, 0 for a successful
   * answer whose schema cannot be used.
   */
  public int errorCode() {
    return errorCode;
  }

  /** Whether the registry answered that the subject, the schema or the id does not exist. */
  public boolean notFound() {
    return status == 404;
  }
}
