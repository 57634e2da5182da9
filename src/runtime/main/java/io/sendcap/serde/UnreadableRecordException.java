package io.sendcap.serde;

import org.apache.kafka.common.errors.SerializationException;

/**
 * Bytes that are not a record sendcap can read: not Avro in either framing, Avro that sendcap's
 * schema cannot hold, or framed with a schema id the registry does not resolve to a schema (an
 * unknown id, an answer that is not one).
 *
 * <p>It is about the data, not the code that read it, so, like Kafka's {@code ApiException}, it
 * carries no stack trace and no cause: the message says what is wrong with the bytes, in the Avro
 * decoder's own words where it had any. A record that fails this way goes to the dead-letter topic,
 * whose {@code __streams.errors.stacktrace} header is then that one line, not the same sixty frames
 * of the deserializer for every bad record.
 */
public final class UnreadableRecordException extends SerializationException {
  private static final long serialVersionUID = 1L;

  UnreadableRecordException(String message) {
    super(message);
  }

  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
