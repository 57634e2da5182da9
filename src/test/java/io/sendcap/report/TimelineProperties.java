package io.sendcap.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * A timeline counted event by event, coarsening as it goes, equals the events bucketed at once in
 * the size their whole span asks for.
 */
class TimelineProperties {
  private static final long START = Instant.parse("2026-11-02T00:00:00Z").toEpochMilli();

  record Event(long at, String series) {}

  @Provide
  Arbitrary<List<Event>> events() {
    // Spans from seconds to about three years, so that every bucket size is reached.
    Arbitrary<Long> span =
        Arbitraries.of(60_000L, 7_200_000L, 86_400_000L, 30 * 86_400_000L, 1_000 * 86_400_000L);
    return span.flatMap(
        s ->
            Combinators.combine(
                    Arbitraries.longs().between(START - s, START + s),
                    Arbitraries.of("CAP 1d", "MIN_INTERVAL", "LIMITER_UNAVAILABLE"))
                .as(Event::new)
                .list()
                .ofMinSize(1)
                .ofMaxSize(300));
  }

  @Property(tries = 300)
  void streamedCountsEqualCountsBucketedAtOnce(@ForAll("events") List<Event> events) {
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
