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
   * Decides a batch of sends, in order: a send sees the sends of the same batch before it.
   *
   * @return one decision per request, in request order
   * @throws LimiterUnavailableException if the store cannot be reached; nothing may be assumed
   *     about which requests were recorded, and deciding the batch again is safe
   */
  List<Decision> decide(List<CapRequest> requests);

  /** Releases the store's connection. */
  @Override
  void close();
}
