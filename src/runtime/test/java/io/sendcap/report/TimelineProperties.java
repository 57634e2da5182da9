package io.sendcap.report;

import static io.sendcap.testing.Generators.lists;
import static io.sendcap.testing.Generators.longs;
import static io.sendcap.testing.Generators.sizes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * A timeline counted event by event, coarsening as it goes, equals the events bucketed at once in
 * the size their whole span asks for.
 */
class TimelineProperties {
  private static final long START = Instant.parse("2026-11-02T00:00:00Z").toEpochMilli();

  /**
   * Examples to run: QuickTheories counts an input it skips as already tried (its first two, the
   * simplest and the smallest, are often the same) among its examples, hence a tenth more than the
   * 300 tries the property had.
   */
  private static final int TRIES = 330;

  record Event(long at, String series) {}

  private static Gen<List<Event>> events() {
    // Spans from seconds to about three years, so that every bucket size is reached.
    Gen<Long> span =
        Generate.pick(
            List.of(60_000L, 7_200_000L, 86_400_000L, 30 * 86_400_000L, 1_000 * 86_400_000L));
    Gen<String> series = Generate.pick(List.of("CAP 1d", "MIN_INTERVAL", "LIMITER_UNAVAILABLE"));
    return span.flatMap(
        s -> lists(longs(START - s, START + s).zip(series, Event::new), sizes(1, 300, TRIES), 1));
  }

  @Test
  void streamedCountsEqualCountsBucketedAtOnce() {
    qt().withExamples(TRIES)
        .forAll(events())
        .checkAssert(TimelineProperties::streamedCountsEqualCountsBucketedAtOnce);
  }

  private static void streamedCountsEqualCountsBucketedAtOnce(List<Event> events) {
    Timeline timeline = new Timeline();
    events.forEach(e -> timeline.add(Instant.ofEpochMilli(e.at()), e.series()));

    long first = events.stream().mapToLong(Event::at).min().orElseThrow();
    long last = events.stream().mapToLong(Event::at).max().orElseThrow();
    BucketSize size = BucketSize.fitting(first, last, Timeline.MAX_BUCKETS);
    Map<String, Long> expected = new HashMap<>();
    events.forEach(e -> expected.merge(size.floor(e.at()) + " " + e.series(), 1L, Long::sum));

    assertThat(timeline.bucketSize()).isEqualTo(size);
    assertThat(timeline.buckets())
        .hasSize((int) size.buckets(first, last))
        .first()
        .isEqualTo(Instant.ofEpochMilli(size.floor(first)));
    Map<String, Long> counted = new HashMap<>();
    for (Instant bucket : timeline.buckets()) {
      for (String series : timeline.totals().keySet()) {
        long n = timeline.count(bucket, series);
        if (n > 0) {
          counted.put(bucket.toEpochMilli() + " " + series, n);
        }
      }
    }
    assertThat(counted).isEqualTo(expected);
  }
}
