package io.sendcap.topology;

/** A send that was read but cannot be decided; it goes to the dead-letter topic. */
final class InvalidSendException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  InvalidSendException(String message) {
    super(message, null, false, false);
  }
}
