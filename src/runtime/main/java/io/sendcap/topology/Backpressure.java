package io.sendcap.topology;

import io.sendcap.limit.LimiterUnavailableException;

/**
 * Holds sends back while the limiter cannot be reached under {@code cap.redis.failure-mode=block}:
 * the cap processor reports every batch the limiter could not decide and every batch it did, and
 * asks before each flush whether to hold the sends in its buffer instead.
 *
 * <p>The application's implementation pauses Kafka Streams, so that no more input is read while
 * sends wait, probes Redis, and resumes once it answers.
 */
public interface Backpressure {
  /** Never holds: a batch that could not be decided is tried again at the next flush. */
  Backpressure NONE =
      new Backpressure() {
        @Override
        public boolean holding() {
          return false;
        }

        @Override
        public void unavailable(LimiterUnavailableException cause, int waiting) {}

        @Override
        public void answered() {}
      };

  /** Whether sends are held back: the limiter was unreachable and has not been reached since. */
  boolean holding();

  /**
   * Reports that the limiter could not decide a batch; its sends are back in the buffer.
   *
   * @param cause why the limiter could not be reached
   * @param waiting the sends of the reporting task that now wait for the limiter
   */
  void unavailable(LimiterUnavailableException cause, int waiting);

  /** Reports that the limiter decided a batch. */
  void answered();

  /**
   * Reports that the limiter could not decide (all) the sends of a batch, which {@code
   * cap.redis.failure-mode} {@code allow} or {@code suppress} decided instead: a refusal ({@link
   * io.sendcap.limit.LimiterRefusedException}) is for health to report all the same.
   */
  default void decidedWithout(LimiterUnavailableException cause) {}
}
