package io.sendcap.topology;

import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Deadline;
import io.sendcap.limit.LimiterUnavailableException;
import java.util.List;
import java.util.function.Supplier;

/**
 * A task's cap store, opened at the task's first batch rather than when the task starts, and at the
 * next batch again for as long as opening fails.
 *
 * <p>A task can start while Redis is down (a rebalance during an outage): opening its connection in
 * {@code init()} failed the stream thread, and its replacement failed the same way until liveness
 * gave up. A store that cannot be opened fails its batch with {@link LimiterUnavailableException}
 * instead, which {@code cap.redis.failure-mode} handles as any batch the limiter cannot decide. A
 * failed opening holds nothing to close.
 */
final class OnDemandCapStore implements CapStore {
  private final Supplier<CapStore> opener;
  private CapStore store;

  OnDemandCapStore(Supplier<CapStore> opener) {
    this.opener = opener;
  }

  @Override
  public Pending submit(List<CapRequest> requests) {
    return store().submit(requests);
  }

  @Override
  public Pending submit(List<CapRequest> requests, Deadline deadline) {
    return store().submit(requests, deadline);
  }

  /**
   * The store, opened now if it is not yet.
   *
   * @throws LimiterUnavailableException if it cannot be opened
   */
  private CapStore store() {
    if (store == null) {
      store = opener.get();
    }
    return store;
  }

  @Override
  public void close() {
    if (store != null) {
      store.close();
      store = null;
    }
  }
}
