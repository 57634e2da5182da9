package io.sendcap.limit;

/** The cap store could not be reached or did not answer in time. */
public final class LimiterUnavailableException extends RuntimeException {
  /** Creates the exception with what failed and its cause. */
  public LimiterUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
