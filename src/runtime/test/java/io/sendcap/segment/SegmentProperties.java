package io.sendcap.segment;

import static io.sendcap.testing.Generators.longs;
import static io.sendcap.testing.Generators.sets;
import static io.sendcap.testing.Generators.sizes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.quicktheories.api.Pair;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/** A segment published in chunks and loaded back holds exactly the ids it was built from. */
class SegmentProperties {
  private static final long BOUNDARY = 1L << 32;

  /**
   * Examples to run: QuickTheories counts an input it skips as already tried (its first two, the
   * simplest and the smallest, are often the same) among its examples, hence a tenth more than the
   * 200 tries the property had.
   */
  private static final int TRIES = 220;

  static Gen<Set<Long>> ids() {
    Gen<Long> nearBoundary = longs(BOUNDARY - 70_000, BOUNDARY + 70_000);
    Gen<Long> low = longs(0, BOUNDARY - 1);
    Gen<Long> high = longs(BOUNDARY, Long.MAX_VALUE);
    Gen<Long> id = Generate.frequency(Pair.of(3, nearBoundary), Pair.of(2, low), Pair.of(1, high));
    return sets(id, sizes(0, 400, TRIES));
  }

  static Gen<Integer> chunkBytes() {
    return longs(8, 4096).map(Long::intValue);
  }

  @Test
  void membershipAfterPublishAndLoadEqualsTheSet() {
    qt().withExamples(TRIES)
        .forAll(ids(), ids(), chunkBytes())
        .checkAssert(SegmentProperties::membershipAfterPublishAndLoadEqualsTheSet);
  }

  private static void membershipAfterPublishAndLoadEqualsTheSet(
      Set<Long> ids, Set<Long> probes, int chunkBytes) {
    UserIds users = new UserIds();
    ids.forEach(users::add);
    users.optimize();

    SegmentRegistry registry = new SegmentRegistry(List.of("s"));
    SegmentLoader loader = new SegmentLoader(registry, Integer.MAX_VALUE, reason -> {});
    Map<String, byte[]> store = new HashMap<>();
    SegmentLoader.ChunkStore chunks = SegmentLoader.ChunkStore.of(store);
    for (SegmentRecords.Entry e : SegmentRecords.publish("s", 1, users, chunkBytes, 0)) {
      loader.onRecord(e.key(), e.value(), chunks);
    }
    assertThat(store).as("chunks leave the store once assembled").isEmpty();

    assertThat(registry.version("s")).isEqualTo(1);
    assertThat(registry.loaded().get("s").ids().cardinality()).isEqualTo(ids.size());
    for (long id : ids) {
      assertThat(registry.segmentOf(id)).as("member %d", id).isEqualTo("s");
    }
    for (long probe : probes) {
      assertThat(registry.segmentOf(probe) != null)
          .as("probe %d", probe)
          .isEqualTo(ids.contains(probe));
    }
  }
}
