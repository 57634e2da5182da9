package io.sendcap.topology;

import static io.sendcap.testing.Generators.lists;
import static io.sendcap.testing.Generators.longs;
import static io.sendcap.testing.Generators.sizes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class ByOffsetProperties {
  /**
   * As in the other properties: a tenth more than the tries, for the inputs QuickTheories skips.
   */
  private static final int TRIES = 1_100;

  /**
   * Offsets held in any order (a run in ascending order, as a task reads them, then a batch held
   * again before it, and sends restored from an earlier buffer anywhere) read back as a sorted map
   * of the same puts holds them.
   */
  @Test
  void holdsWhatASortedMapHolds() {
    qt().withExamples(TRIES)
        .forAll(
            lists(longs(0, 3), sizes(0, 200, TRIES), 0),
            lists(longs(-50, 400), sizes(0, 60, TRIES), 0),
            longs(-60, 420))
        .checkAssert(ByOffsetProperties::holdsWhatASortedMapHolds);
  }

  private static void holdsWhatASortedMapHolds(List<Long> steps, List<Long> anywhere, long probe) {
    TreeMap<Long, String> model = new TreeMap<>();
    ByOffset<String> held = new ByOffset<>(4);
    long offset = 100;
    List<Long> puts = new ArrayList<>();
    for (long step : steps) {
      offset += step; // a step of 0 holds the same offset again: the later value wins
      puts.add(offset);
    }
    puts.addAll(anywhere);
    for (int i = 0; i < puts.size(); i++) {
      String value = "v" + i;
      model.put(puts.get(i), value);
      held.put(puts.get(i), value);
    }

    assertThat(held.size()).isEqualTo(model.size());
    assertThat(held.isEmpty()).isEqualTo(model.isEmpty());
    List<Map.Entry<Long, String>> walked = new ArrayList<>();
    held.forEach((o, v) -> walked.add(Map.entry(o, v)));
    assertThat(walked).containsExactlyElementsOf(model.entrySet());
    for (int i = 0; i < held.size(); i++) {
      assertThat(Map.entry(held.offset(i), held.value(i))).isEqualTo(walked.get(i));
    }
    assertThat(held.get(probe)).isEqualTo(model.get(probe));
    assertThat(held.containsKey(probe)).isEqualTo(model.containsKey(probe));
    Long above = model.higherKey(probe);
    int index = held.indexAbove(probe);
    if (above == null) {
      assertThat(index).isEqualTo(held.size());
    } else {
      assertThat(held.offset(index)).isEqualTo(above);
    }
  }
}
