package io.sendcap.limit;

import java.util.List;

/**
 * The cap store answered and refused sendcap's calls for a reason an operator must fix: an ACL
 * without a command or key sendcap needs (NOPERM), credentials (NOAUTH, WRONGPASS), memory (OOM),
 * persistence (MISCONF) or the script failing on the server. Sends wait as they do for an outage,
 * and health reports the reason instead of a stall with green health.
 */
public final class LimiterRefusedException extends LimiterUnavailableException {
  private static final long serialVersionUID = 1L;

  /** Creates the exception with what Redis refused and its reply. */
  public LimiterRefusedException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * Creates the exception with the decisions the store made all the same (see {@link #decided}).
   */
  public LimiterRefusedException(String message, Throwable cause, List<Decision> decided) {
    super(message, cause, decided);
  }
}
