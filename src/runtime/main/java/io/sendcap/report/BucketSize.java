package io.sendcap.report;

import java.time.Duration;

/**
 * The length of a chart's time buckets, from a minute to a week. Each size is a whole number of the
 * one before, and buckets start at whole multiples of their size in UTC (weeks on Mondays), so the
 * buckets of one size fall exactly into those of the next.
 */
public enum BucketSize {
  MINUTE(Duration.ofMinutes(1), "minute"),
  FIVE_MINUTES(Duration.ofMinutes(5), "5 minutes"),
  FIFTEEN_MINUTES(Duration.ofMinutes(15), "15 minutes"),
  HOUR(Duration.ofHours(1), "hour"),
  SIX_HOURS(Duration.ofHours(6), "6 hours"),
  DAY(Duration.ofDays(1), "day"),
  WEEK(Duration.ofDays(7), "week");

  /** 1970-01-05, the first Monday after the epoch: where weeks start. */
  static final long MONDAY = Duration.ofDays(4).toMillis();

  private final long millis;
  private final String label;

  BucketSize(Duration length, String label) {
    this.millis = length.toMillis();
    this.label = label;
  }

  /** The length of a bucket in milliseconds. */
  public long millis() {
    return millis;
  }

  /** How a bucket is named after "per": {@code hour}, {@code 5 minutes}. */
  public String label() {
    return label;
  }

  /** The start of the bucket holding {@code epochMillis}. */
  public long floor(long epochMillis) {
    long origin = origin();
    return Math.floorDiv(epochMillis - origin, millis) * millis + origin;
  }

  /** Where the buckets of this size are counted from: the epoch, or for weeks its first Monday. */
  long origin() {
    return this == WEEK ? MONDAY : 0;
  }

  /** The number of buckets from the one holding {@code first} to the one holding {@code last}. */
  public long buckets(long first, long last) {
    return (floor(last) - floor(first)) / millis + 1;
  }

  /** The next larger size, or this one if it is the largest. */
  public BucketSize coarser() {
    BucketSize[] all = values();
    return all[Math.min(ordinal() + 1, all.length - 1)];
  }

  /**
   * The smallest size that shows the span from {@code first} to {@code last} in at most {@code
   * maxBuckets} buckets; a week if none does.
   */
  public static BucketSize fitting(long first, long last, int maxBuckets) {
    BucketSize size = MINUTE;
    while (size != WEEK && size.buckets(first, last) > maxBuckets) {
      size = size.coarser();
    }
    return size;
  }
}
