package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/** A segment published in chunks and loaded back holds exactly the ids it was built from. */
class SegmentProperties {
  private static final long BOUNDARY = 1L << 32;

  @Provide
  Arbitrary<Set<Long>> ids() {
    Arbitrary<Long> nearBoundary =
        Arbitraries.longs().between(BOUNDARY - 70_000, BOUNDARY + 70_000);
    Arbitrary<Long> low = Arbitraries.longs().between(0, BOUNDARY - 1);
    Arbitrary<Long> high = Arbitraries.longs().between(BOUNDARY, Long.MAX_VALUE);
    return Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(3, nearBoundary),
            net.jqwik.api.Tuple.of(2, low),
            net.jqwik.api.Tuple.of(1, high))
        .set()
        .ofMaxSize(400);
  }

  @Property(tries = 200)
  void membershipAfterPublishAndLoadEqualsTheSet(
      @ForAll("ids") Set<Long> ids,
      @ForAll("ids") Set<Long> probes,
      @ForAll("chunkBytes") int chunkBytes) {
    UserIds users = new UserIds();
    ids.forEach(users::add);
    users.optimize();

    SegmentRegistry registry = new SegmentRegistry(List.of("s"));
    SegmentLoader loader = new SegmentLoader(registry);
    Map<String, byte[]> store = new HashMap<>();
    SegmentLoader.ChunkStore chunks = SegmentLoader.ChunkStore.of(store::get, store::remove);
    for (SegmentRecords.Entry e : SegmentRecords.publish("s", 1, users, chunkBytes, 0)) {
      store.put(e.key(), e.value());
      loader.onRecord(e.key(), e.value(), chunks);
    }

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

  @Provide
  Arbitrary<Integer> chunkBytes() {
    return Arbitraries.integers().between(8, 4096);
  }
}
