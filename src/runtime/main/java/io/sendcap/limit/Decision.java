package io.sendcap.limit;

/**
 * What the limiter decided for one send.
 *
 * @param outcome allowed, already logged, which constraint failed, or refused by Redis
 * @param capIndex for {@link Outcome#CAPPED}, the index in the policy of the first failing cap;
 *     otherwise -1
 * @param count for {@link Outcome#CAPPED}, the sends logged inside that cap's window
 * @param nextEligibleAt the earliest epoch millisecond at which the same send would be allowed; the
 *     decision time for an allowed send
 * @param reason for {@link Outcome#KEY_REFUSED}, Redis's error about the user's key; otherwise null
 */
public record Decision(
    Outcome outcome, int capIndex, int count, long nextEligibleAt, String reason) {

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
    NOT_A_REPLAY,
    /**
     * Redis could not use the user's key (WRONGTYPE: something other than sendcap wrote it): the
     * send was neither checked nor logged, and cannot be until the key is fixed.
     */
    KEY_REFUSED
  }

  /** A decision without a reason: every outcome but {@link Outcome#KEY_REFUSED}. */
  public Decision(Outcome outcome, int capIndex, int count, long nextEligibleAt) {
    this(outcome, capIndex, count, nextEligibleAt, null);
  }

  /** A send whose user's key Redis could not use, for {@code reason}. */
  public static Decision keyRefused(String reason, long now) {
    return new Decision(Outcome.KEY_REFUSED, -1, 0, now, reason);
  }

  /** Whether the send may be delivered. */
  public boolean allowed() {
    return outcome == Outcome.ALLOWED || outcome == Outcome.DUPLICATE;
  }
}
