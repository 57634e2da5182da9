package io.sendcap.limit;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/** The counters of global caps as quota.lua keeps them, in memory, for tests without Redis. */
public final class QuotaCounters implements QuotaStore {
  private final Map<String, Long> used = new HashMap<>();
  private int reserves;
  private int releases;
  private boolean unreachable;
  private CompletableFuture<Void> releasesAnswered;

  /** Makes every call fail as if Redis could not be reached, or answer again. */
  public synchronized void unreachable(boolean unreachable) {
    this.unreachable = unreachable;
  }

  /**
   * Makes releases wait for {@code answer} before they take effect, as a slow Redis would; null
   * answers at once.
   */
  public synchronized void answerReleasesWith(CompletableFuture<Void> answer) {
    this.releasesAnswered = answer;
  }

  @Override
  public synchronized long reserve(
      String key, long want, long limit, long ttlMillis, Deadline deadline) {
    if (unreachable) {
      throw new LimiterUnavailableException("reserve: connection refused", null);
    }
    reserves++;
    long u = used.getOrDefault(key, 0L);
    long grant = Math.max(0, Math.min(want, limit - u));
    used.put(key, u + grant);
    return grant;
  }

  @Override
  public synchronized CompletionStage<Void> release(String key, long tokens) {
    if (unreachable) {
      return CompletableFuture.failedFuture(
          new LimiterUnavailableException("release: connection refused", null));
    }
    releases++;
    if (releasesAnswered == null) {
      apply(key, tokens);
      return CompletableFuture.completedFuture(null);
    }
    return releasesAnswered.thenRun(() -> apply(key, tokens));
  }

  private synchronized void apply(String key, long tokens) {
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
