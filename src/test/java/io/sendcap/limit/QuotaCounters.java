package io.sendcap.limit;

import java.util.HashMap;
import java.util.Map;

/** The counters of global caps as quota.lua keeps them, in memory, for tests without Redis. */
public final class QuotaCounters implements QuotaStore {
  private final Map<String, Long> used = new HashMap<>();
  private int reserves;
  private int releases;

  @Override
  public synchronized long reserve(String key, long want, long limit, long ttlMillis) {
    reserves++;
    long u = used.getOrDefault(key, 0L);
    long grant = Math.max(0, Math.min(want, limit - u));
    used.put(key, u + grant);
    return grant;
  }

  @Override
  public synchronized void release(String key, long tokens) {
    releases++;
    used.merge(key, -Math.min(tokens, used.getOrDefault(key, 0L)), Long::sum);
  }

  /** The tokens counted over every counter. */
  public synchronized long total() {
    return used.values().stream().mapToLong(Long::longValue).sum();
  }

  /** Calls that reserved tokens. */
  public synchronized int reserves() {
    return reserves;
  }

  /** Calls that gave tokens back. */
  public synchronized int releases() {
    return releases;
  }

  @Override
  public void close() {}
}
