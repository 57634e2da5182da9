package io.sendcap.limit;

/**
 * What the limiter decided for one send.
 *
 * @param outcome allowed, already logged, or which constraint failed
 * @param capIndex for {@link Outcome#CAPPED}, the index in the policy of the first failing cap;
 *     otherwise -1
 * @param count for {@link Outcome#CAPPED}, the sends logged inside that cap's window
 * @param nextEligibleAt the earliest epoch millisecond at which the same send would be allowed; the
 *     decision time for an allowed send
 */
public record Decision(Outcome outcome, int capIndex, int count, long nextEligibleAt) {

  /** The kinds of decision. */
  public enum Outcome {
    /** Allowed and logged: it consumed quota. */
    ALLOWED,
    /** Already logged under its message id: allowed again, nothing consumed. */
    DUPLICATE,
    /** A cap was full. */
    CAPPED,
    /** The user's newest send is too recent. */
    MIN_INTERVAL,
    /** Asked only whether it is a replay ({@link CapRequest#probe()}): it is not. */
    NOT_A_REPLAY
  }

  /** Whether the send may be delivered. */
  public boolean allowed() {
    return outcome == Outcome.ALLOWED || outcome == Outcome.DUPLICATE;
  }
}
