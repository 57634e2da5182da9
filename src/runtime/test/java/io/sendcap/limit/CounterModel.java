package io.sendcap.limit;

import io.sendcap.config.Cap;

/**
 * A plain model of the counter of one cap that is not a sliding log, for one user: the reference
 * the script's counters are compared with. Each is written as a different formulation of its
 * algorithm than the script's, so that the two check each other.
 */
interface CounterModel {
  /**
   * What the counter says of a send at {@code now}.
   *
   * @param count the sends it holds (the cap is full iff count >= limit)
   * @param releasedAt the earliest time >= now at which it would let the send through, if full
   * @param charge counts the send, if it is allowed
   */
  record Verdict(long count, long releasedAt, Runnable charge) {}

  /** Judges a send at {@code now} against {@code cap}, whose counter this is. */
  Verdict judge(Cap cap, long now);

  /** A new, empty counter of {@code algorithm}. */
  static CounterModel of(Cap.Algorithm algorithm) {
    return switch (algorithm) {
      case FIXED_WINDOW -> new FixedWindowModel();
      case SLIDING_WINDOW -> new SlidingWindowModel();
      case TOKEN_BUCKET -> new TokenBucketModel();
      case SLIDING_LOG -> throw new IllegalArgumentException("a sliding log keeps no counter");
    };
  }
}
