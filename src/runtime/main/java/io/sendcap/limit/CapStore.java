package io.sendcap.limit;

import java.util.List;

/**
 * Where sends are checked against their caps and recorded.
 *
 * <p>One instance serves one stream task (one thread at a time). Each request is checked and, if
 * allowed, recorded atomically; a request whose message id is already recorded is allowed again
 * without consuming quota, so a batch may safely be decided twice.
 */
public interface CapStore extends AutoCloseable {
  /**
   * Sends a batch to be decided, in order (a send sees the sends of the same batch before it), and
   * returns without waiting for the decisions, so that the caller can prepare the next batch
   * meanwhile. Batches are decided in the order they are submitted.
   */
  Pending submit(List<CapRequest> requests);

  /**
   * Sends a batch to be decided, as {@link #submit(List)} does, whose decisions must have arrived
   * by {@code deadline}: past it, waiting for them fails as if the store could not be reached. A
   * store that answers at once may ignore it.
   */
  default Pending submit(List<CapRequest> requests, Deadline deadline) {
    return submit(requests);
  }

  /**
   * Decides a batch and waits for the decisions.
   *
   * @return one decision per request, in request order
   * @throws LimiterUnavailableException if the store cannot be reached; nothing may be assumed
   *     about which requests were recorded, and deciding the batch again is safe
   */
  default List<Decision> decide(List<CapRequest> requests) {
    return submit(requests).await();
  }

  /** Releases the store's connection. */
  @Override
  void close();

  /** The decisions of a submitted batch, on their way. */
  interface Pending {
    /**
     * Waits for the decisions: one per request, in request order.
     *
     * @throws LimiterUnavailableException as {@link CapStore#decide} does
     */
    List<Decision> await();

    /**
     * Whether {@link #await()} would return at once: the decisions have arrived, or waiting for
     * them would fail at once (the deadline has passed). A store that answers at once is always
     * ready.
     */
    default boolean ready() {
      return true;
    }
  }
}
