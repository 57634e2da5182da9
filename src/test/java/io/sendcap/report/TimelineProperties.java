package io.sendcap.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.LongStream;
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

  // Generators shaped as those these properties were first written with: numbers leaning to where
  // they shrink, mostly small collections, and edge cases mixed in. Each value is made of draws
  // whose ranges are the same whatever comes out, so that QuickTheories, which shrinks one draw at
  // a time, does not shift the meaning of the draws after it.

  /**
   * Longs from min to max (a range narrower than all longs): one in twenty an edge case (the end
   * nearest zero, where they shrink to, min, max, -2 to 2), nine in twenty uniform, and the rest
   * spread evenly over the magnitudes away from that end (uniform too if at most 21 values).
   */
  private static Gen<Long> longs(long min, long max) {
    long target = Math.max(min, Math.min(max, 0));
    List<Long> edgeCases =
        LongStream.of(target, min, max, -2, -1, 0, 1, 2)
            .filter(v -> v >= min && v <= max)
            .distinct()
            .boxed()
            .toList();
    long span = max - min + 1; // unsigned
    long upTo = max - target;
    long downTo = target - min;
    return Generate.range(0, 19)
        .zip(
            Generate.range(0, 63),
            Generate.longRange(0, Long.MAX_VALUE),
            (kind, bits, raw) -> {
              if (kind == 19) {
                return edgeCases.get((int) (raw % edgeCases.size()));
              }
              if (kind >= 10 || Long.compareUnsigned(span, 21) <= 0) {
                return min + Long.remainderUnsigned(raw, span);
              }
              boolean down = upTo == 0 || (downTo > 0 && raw % 2 == 1);
              long bound = down ? downTo : upTo;
              int width = (65 - Long.numberOfLeadingZeros(bound)) * bits / 64;
              long d = raw >>> (63 - width); // below 2^width, which is at most 2 * bound
              d = d <= bound ? d : d - bound - 1;
              return down ? target - d : target + d;
            });
  }

  /**
   * Sizes from min to max: one in twenty min, mostly small (up to min + max(10, √tries)), one in
   * ten larger and one in fifty max; uniform instead of small and larger if that leaves none
   * larger.
   */
  private static Gen<Integer> sizes(int min, int max, int tries) {
    int cutoff = min + Math.max(10, (int) Math.round(Math.sqrt(tries)));
    return Generate.range(0, 9_999)
        .map(
            u -> {
              if (u < 500) {
                return min;
              } else if (cutoff >= max) {
                return min + (u - 500) * (max - min + 1) / 9_500;
              } else if (u < 8_800) {
                return min + (u - 500) * (cutoff - min + 1) / 8_300;
              } else if (u < 9_800) {
                return cutoff + 1 + (u - 8_800) * (max - cutoff) / 1_000;
              }
              return max;
            });
  }

  /**
   * Lists of at least min elements, as many as the size drawn but for one slot in twenty left
   * empty: every slot is drawn, so that shrinking can empty one and drop its element without moving
   * the others.
   */
  private static <T> Gen<List<T>> lists(Gen<T> elements, Gen<Integer> sizes, int min) {
    Gen<Integer> keep = Generate.range(0, 19);
    return in -> {
      int size = sizes.generate(in);
      List<T> list = new ArrayList<>(size);
      for (int i = 0; i < size; i++) {
        boolean kept = keep.generate(in) > 0 || list.size() + size - i <= min;
        T element = elements.generate(in);
        if (kept) {
          list.add(element);
        }
      }
      return list;
    };
  }
}
