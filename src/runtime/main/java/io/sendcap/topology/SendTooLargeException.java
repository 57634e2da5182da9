package io.sendcap.topology;

import org.apache.kafka.common.errors.SerializationException;

/**
 * A send larger than sendcap can decide and write: its value and headers exceed {@code
 * cap.max-send-bytes}, or its key {@link io.sendcap.config.SendcapConfig#MAX_KEY_BYTES}. It goes to
 * the dead-letter topic, without its body, before it is decided.
 */
final class SendTooLargeException extends SerializationException {
  private static final long serialVersionUID = 1L;

  SendTooLargeException(String message) {
    super(message);
  }

  /** Like {@link InvalidSendException}, about the record, not the code: no stack trace. */
  @Override
  public synchronized Throwable fillInStackTrace() {
    return this;
  }
}
