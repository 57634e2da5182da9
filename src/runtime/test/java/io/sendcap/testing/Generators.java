package io.sendcap.testing;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.LongStream;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Generators of QuickTheories for the property tests: numbers leaning to where they shrink, mostly
 * small collections, and edge cases mixed in. Each value is made of draws whose ranges are the same
 * whatever comes out, so that QuickTheories, which shrinks one draw at a time, does not shift the
 * meaning of the draws after it.
 */
public final class Generators {
  private Generators() {}

  /** Ints from min to max, drawn as {@link #longs} are. */
  public static Gen<Integer> ints(int min, int max) {
    return longs(min, max).map(Long::intValue);
  }

  /** Null in {@code percent} of the draws (where they shrink to), else one of {@code values}. */
  public static <T> Gen<T> nullOr(int percent, Gen<T> values) {
    return Generate.range(0, 99).zip(values, (p, value) -> p < percent ? null : value);
  }

  /**
   * Longs from min to max (a range narrower than all longs): one in twenty an edge case (the end
   * nearest zero, where they shrink to, min, max, -2 to 2), nine in twenty uniform, and the rest
   * spread evenly over the magnitudes away from that end (uniform too if at most 21 values).
   */
  public static Gen<Long> longs(long min, long max) {
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
  public static Gen<Integer> sizes(int min, int max, int tries) {
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
  public static <T> Gen<List<T>> lists(Gen<T> elements, Gen<Integer> sizes, int min) {
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

  /**
   * Sets of distinct elements, drawn as {@link #lists} are, an element already in the set drawn
   * again up to ten times.
   */
  public static <T> Gen<Set<T>> sets(Gen<T> elements, Gen<Integer> sizes) {
    Gen<Integer> keep = Generate.range(0, 19);
    return in -> {
      int size = sizes.generate(in);
      Set<T> set = new LinkedHashSet<>();
      for (int i = 0; i < size; i++) {
        boolean kept = keep.generate(in) > 0;
        T element = elements.generate(in);
        for (int again = 0; kept && set.contains(element) && again < 10; again++) {
          element = elements.generate(in);
        }
        if (kept) {
          set.add(element);
        }
      }
      return set;
    };
  }
}
