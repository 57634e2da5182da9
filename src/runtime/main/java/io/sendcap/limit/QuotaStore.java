package io.sendcap.limit;

import java.util.concurrent.CompletionStage;

/** Where the counters of global caps live: one counter per cap, scope and window. */
public interface QuotaStore extends AutoCloseable {
  /**
   * Reserves up to {@code want} tokens of a window's counter, never beyond {@code limit}.
   *
   * @param key the counter
   * @param ttlMillis how long the counter lives after a reservation
   * @param deadline when the answer must have arrived by, at the latest
   * @return the tokens granted: fewer than wanted only if the counter reached its limit
   * @throws LimiterUnavailableException if the store cannot be reached in time
   */
  long reserve(String key, long want, long limit, long ttlMillis, Deadline deadline);

  /**
   * Gives back {@code tokens} reserved and not used, without waiting for the store.
   *
   * @return completes once the store has them back, or exceptionally with a {@link
   *     LimiterUnavailableException} if it cannot be reached
   */
  CompletionStage<Void> release(String key, long tokens);

  @Override
  void close();
}
