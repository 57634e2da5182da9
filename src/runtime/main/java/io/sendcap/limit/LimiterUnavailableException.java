package io.sendcap.limit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The cap store could not be reached or did not answer in time; or, as {@link
 * LimiterRefusedException}, it answered and refused.
 */
public class LimiterUnavailableException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The decisions the store did make; empty if it made none that are known. */
  private final transient List<Decision> decided;

  /** Creates the exception with what failed and its cause. */
  public LimiterUnavailableException(String message, Throwable cause) {
    this(message, cause, List.of());
  }

  /**
   * Creates the exception with what failed, its cause and the decisions the store made all the
   * same: one per request of the batch, in request order, null for each request left undecided.
   */
  public LimiterUnavailableException(String message, Throwable cause, List<Decision> decided) {
    super(message, cause);
    this.decided = Collections.unmodifiableList(new ArrayList<>(decided));
  }

  /**
   * The decisions the store made for the batch though some of its calls failed: one per request, in
   * request order, null for each request that was not decided; empty if none is known. A send
   * decided here was checked and, if allowed, logged.
   */
  public List<Decision> decided() {
    return decided;
  }
}
