package io.sendcap.report;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Counts of events per time bucket and series (a reason, a segment), in the smallest {@link
 * BucketSize} that shows the span of the events seen so far in at most {@link #MAX_BUCKETS}
 * buckets.
 *
 * <p>Events are counted as they come: when the span outgrows the bucket size, the counts are merged
 * into the next size, which is exact because buckets nest. Memory is therefore bounded by {@code
 * MAX_BUCKETS} times the number of series, however many events there are.
 */
public final class Timeline {
  /** The most buckets a chart shows, unless even weeks need more. */
  public static final int MAX_BUCKETS = 120;

  private final TreeMap<Long, Map<String, Long>> counts = new TreeMap<>();
  private BucketSize size = BucketSize.MINUTE;
  private long first = Long.MAX_VALUE;
  private long last = Long.MIN_VALUE;

  /** Counts one event of {@code series} at {@code at}. */
  public void add(Instant at, String series) {
    long t = at.toEpochMilli();
    if (t < first || t > last) {
      first = Math.min(first, t);
      last = Math.max(last, t);
      BucketSize fitting = BucketSize.fitting(first, last, MAX_BUCKETS);
      while (size.compareTo(fitting) < 0) {
        coarsen();
      }
    }
    counts.computeIfAbsent(size.floor(t), b -> new HashMap<>()).merge(series, 1L, Long::sum);
  }

  private void coarsen() {
    BucketSize next = size.coarser();
    TreeMap<Long, Map<String, Long>> merged = new TreeMap<>();
    counts.forEach(
        (bucket, bySeries) -> {
          Map<String, Long> into = merged.computeIfAbsent(next.floor(bucket), b -> new HashMap<>());
          bySeries.forEach((series, n) -> into.merge(series, n, Long::sum));
        });
    counts.clear();
    counts.putAll(merged);
    size = next;
  }

  /** Whether no event has been counted. */
  public boolean isEmpty() {
    return counts.isEmpty();
  }

  /** The size of the buckets. */
  public BucketSize bucketSize() {
    return size;
  }

  /** The start of every bucket from the first event's to the last's, empty ones included. */
  public List<Instant> buckets() {
    List<Instant> buckets = new ArrayList<>();
    if (!isEmpty()) {
      for (long b = counts.firstKey(); b <= counts.lastKey(); b += size.millis()) {
        buckets.add(Instant.ofEpochMilli(b));
      }
    }
    return buckets;
  }

  /** The events of {@code series} in the bucket starting at {@code bucket}. */
  public long count(Instant bucket, String series) {
    return counts.getOrDefault(bucket.toEpochMilli(), Map.of()).getOrDefault(series, 0L);
  }

  /** The events of each series, the most frequent first (ties by name). */
  public Map<String, Long> totals() {
    Map<String, Long> totals = new HashMap<>();
    counts.values().forEach(m -> m.forEach((series, n) -> totals.merge(series, n, Long::sum)));
    Map<String, Long> sorted = new LinkedHashMap<>();
    totals.entrySet().stream()
        .sorted(
            Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder())
                .thenComparing(Map.Entry.comparingByKey()))
        .forEach(e -> sorted.put(e.getKey(), e.getValue()));
    return sorted;
  }
}
