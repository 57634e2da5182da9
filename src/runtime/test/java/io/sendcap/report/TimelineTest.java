package io.sendcap.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TimelineTest {
  private static final Instant T = Instant.parse("2026-11-20T10:00:00Z");

  private static BucketSize sizeFor(Duration span) {
    return BucketSize.fitting(T.toEpochMilli(), T.plus(span).toEpochMilli(), Timeline.MAX_BUCKETS);
  }

  @Test
  void theBucketIsTheSmallestThatShowsTheSpanInAtMost120Bars() {
    assertThat(sizeFor(Duration.ofMinutes(90))).isEqualTo(BucketSize.MINUTE);
    assertThat(sizeFor(Duration.ofHours(3))).isEqualTo(BucketSize.FIVE_MINUTES);
    assertThat(sizeFor(Duration.ofHours(12))).isEqualTo(BucketSize.FIFTEEN_MINUTES);
    assertThat(sizeFor(Duration.ofHours(36))).isEqualTo(BucketSize.HOUR);
    assertThat(sizeFor(Duration.ofDays(10))).isEqualTo(BucketSize.SIX_HOURS);
    assertThat(sizeFor(Duration.ofDays(60))).isEqualTo(BucketSize.DAY);
    assertThat(sizeFor(Duration.ofDays(3 * 365))).isEqualTo(BucketSize.WEEK);
  }

  @Test
  void weeksStartOnMondayAndDaysAtMidnightUtc() {
    long sunday = Instant.parse("2026-11-22T21:30:00Z").toEpochMilli();
    assertThat(Instant.ofEpochMilli(BucketSize.WEEK.floor(sunday)))
        .isEqualTo(Instant.parse("2026-11-16T00:00:00Z"));
    assertThat(Instant.ofEpochMilli(BucketSize.DAY.floor(sunday)))
        .isEqualTo(Instant.parse("2026-11-22T00:00:00Z"));
    assertThat(Instant.ofEpochMilli(BucketSize.SIX_HOURS.floor(sunday)))
        .isEqualTo(Instant.parse("2026-11-22T18:00:00Z"));
  }

  @Test
  void emptyBucketsBetweenEventsAreShownAndSeriesAreTotalledLargestFirst() {
    Timeline timeline = new Timeline();
    timeline.add(T, "MIN_INTERVAL");
    timeline.add(T.plus(Duration.ofMinutes(3)), "CAP 1d");
    timeline.add(T.plus(Duration.ofMinutes(3).plusSeconds(59)), "CAP 1d");

    assertThat(timeline.bucketSize()).isEqualTo(BucketSize.MINUTE);
    assertThat(timeline.buckets())
        .containsExactly(T, T.plusSeconds(60), T.plusSeconds(120), T.plus(Duration.ofMinutes(3)));
    assertThat(timeline.count(T.plus(Duration.ofMinutes(3)), "CAP 1d")).isEqualTo(2);
    assertThat(timeline.count(T.plusSeconds(60), "CAP 1d")).isZero();
    assertThat(timeline.totals())
        .containsExactly(Map.entry("CAP 1d", 2L), Map.entry("MIN_INTERVAL", 1L));
  }

  @Test
  void anEventFarLaterMergesTheCountsIntoLargerBuckets() {
    Timeline timeline = new Timeline();
    timeline.add(T.plusSeconds(10), "CAP 1d");
    timeline.add(T.plusSeconds(20 * 60), "CAP 1d");
    timeline.add(T.plus(Duration.ofDays(2)), "CAP 1d");

    assertThat(timeline.bucketSize()).isEqualTo(BucketSize.HOUR);
    assertThat(timeline.count(T, "CAP 1d")).isEqualTo(2);
    assertThat(timeline.buckets()).hasSize(49);
  }
}
