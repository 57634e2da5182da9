package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.sendcap.testing.ByteMutator;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes what sendcap reads from the {@code segments} topic: manifests, chunk keys, serialized
 * bitmaps, and the loader that puts them together. Valid records of real publishes are mutated byte
 * by byte ({@link ByteMutator}) and the corpus in {@code fuzz/segment-manifests} and {@code
 * fuzz/segment-bitmaps} (valid records and hostile ones, named by what they are; add there what a
 * long run finds) is replayed as it is and mutated too. The properties: each parser returns a value
 * or throws its declared {@link IllegalArgumentException}, allocating no more than a bound; the
 * loader, fed any mix of such records among valid publishes, never throws, holds no more than its
 * bound, and uses exactly the versions that were published whole.
 *
 * <p>A longer run: {@code mvn -pl src/runtime test -Dtest=SegmentRecordsFuzzTest
 * -Dfuzz.iterations=1000000} (and {@code -Dfuzz.seed=S} for other inputs); a failure prints the
 * seed that makes its input again.
 */
class SegmentRecordsFuzzTest {
  private static final int ITERATIONS = ByteMutator.iterations(3_000);
  private static final long ALLOCATION_BOUND = 16L << 20;

  private static UserIds ids(long... values) {
    UserIds set = new UserIds();
    for (long v : values) {
      set.add(v);
    }
    return set;
  }

  /** Valid bitmaps: empty, 32-bit ids, runs, 64-bit ids. */
  private static Map<String, byte[]> bitmaps() {
    UserIds run = new UserIds();
    for (long u = 100; u < 70_000; u++) {
      run.add(u);
    }
    run.optimize();
    UserIds sparse = new UserIds();
    for (long u = 0; u < 1_000_000; u += 997) {
      sparse.add(u);
    }
    Map<String, byte[]> bitmaps = new HashMap<>();
    bitmaps.put("empty", new UserIds().toPortableBytes());
    bitmaps.put("small", ids(1, 2, 3, 4_000_000_000L).toPortableBytes());
    bitmaps.put("run", run.toPortableBytes());
    bitmaps.put("sparse", sparse.toPortableBytes());
    bitmaps.put("high", ids(5_000_000_000L, 1L << 40, Long.MAX_VALUE).toPortableBytes());
    return bitmaps;
  }

  /** Valid manifests of publishes of those bitmaps, in one and in several chunks. */
  private static Map<String, byte[]> manifests() {
    Map<String, byte[]> manifests = new HashMap<>();
    List<SegmentRecords.Entry> one = SegmentRecords.publish("vip", 3, ids(1, 2), 1024, 7);
    manifests.put("one-chunk", one.get(one.size() - 1).value());
    List<SegmentRecords.Entry> many =
        SegmentRecords.publish("vip", 4, ids(1, 9_000_000_000L), 8, 7);
    manifests.put("many-chunks", many.get(many.size() - 1).value());
    return manifests;
  }

  @Test
  void manifestsParseToAManifestOrTheirDeclaredError() {
    ByteMutator mutator =
        new ByteMutator(
            ByteMutator.seeds(
                ByteMutator.corpus("segment-manifests"), List.copyOf(manifests().values())));
    for (Path file : ByteMutator.corpus("segment-manifests")) {
      parses("corpus " + file, ByteMutator.read(file), m -> manifest(m));
    }
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      parses("seed " + seed, mutator.input(seed), m -> manifest(m));
    }
  }

  @Test
  void chunkKeysParseToAKeyOrTheirDeclaredError() {
    List<byte[]> keys = new ArrayList<>();
    for (String key : List.of("vip/1/0", "new-users/12/345", "a/9223372036854775807/2147483647")) {
      keys.add(key.getBytes(StandardCharsets.UTF_8));
    }
    ByteMutator mutator = new ByteMutator(keys);
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      parses(
          "seed " + seed,
          mutator.input(seed),
          k -> SegmentRecords.ChunkKey.parse(new String(k, StandardCharsets.UTF_8)));
    }
  }

  @Test
  void bitmapsReadToUserIdsOrTheirDeclaredError() {
    ByteMutator mutator =
        new ByteMutator(
            ByteMutator.seeds(
                ByteMutator.corpus("segment-bitmaps"), List.copyOf(bitmaps().values())));
    for (Path file : ByteMutator.corpus("segment-bitmaps")) {
      parses(
          "corpus " + file, ByteMutator.read(file), b -> UserIds.readPortable(ByteBuffer.wrap(b)));
    }
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      parses("seed " + seed, mutator.input(seed), b -> UserIds.readPortable(ByteBuffer.wrap(b)));
    }
  }

  /**
   * Mutated records of publishes, among whole publishes: the loader never throws, stays within its
   * bound, and holds at the end exactly the newest version published whole.
   */
  @Test
  void theLoaderUsesExactlyTheVersionsPublishedWhole() {
    long maxBytes = 4096;
    List<SegmentRecords.Entry> valid = new ArrayList<>();
    for (int v = 1; v <= 4; v++) {
      valid.addAll(SegmentRecords.publish("vip", v, ids(v, 10L * v, 5_000_000_000L + v), 16, v));
    }
    List<byte[]> values = new ArrayList<>();
    valid.forEach(e -> values.add(e.value()));
    ByteMutator mutator = new ByteMutator(values);
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS / 10; seed++) {
      Random random = new Random(seed);
      SegmentRegistry registry = new SegmentRegistry(List.of("vip"));
      SegmentLoader loader = new SegmentLoader(registry, maxBytes, reason -> {});
      SegmentLoader.ChunkStore store = SegmentLoader.ChunkStore.of(new HashMap<>());
      int last = 0;
      for (int v = 1; v <= 4; v++) {
        for (int r = 0; r < 3; r++) {
          SegmentRecords.Entry e = valid.get(random.nextInt(valid.size()));
          String key = random.nextBoolean() ? e.key() : "vip/" + v + "/" + random.nextInt(4);
          byte[] value = mutator.input(random.nextLong());
          if (random.nextInt(3) == 0) {
            key = random.nextBoolean() ? "vip" : "evil";
            value = hostileManifest(random);
          }
          try {
            loader.onRecord(key, value, store);
          } catch (Throwable t) {
            fail("seed " + seed + ": record " + key + " threw " + t, t);
          }
          assertThat(loader.waitingBytes()).as("seed %d", seed).isLessThanOrEqualTo(maxBytes);
        }
        if (random.nextBoolean()) {
          for (SegmentRecords.Entry e :
              SegmentRecords.publish("vip", 10 + v, ids(v, 10L * v, 5_000_000_000L + v), 16, v)) {
            loader.onRecord(e.key(), e.value(), store);
          }
          last = v;
        }
      }
      if (last > 0) {
        assertThat(registry.version("vip")).as("seed %d", seed).isEqualTo(10 + last);
        assertThat(registry.loaded().get("vip").ids())
            .as("seed %d", seed)
            .isEqualTo(ids(last, 10L * last, 5_000_000_000L + last));
      }
    }
  }

  private static final Object[] HOSTILE = {
    null, -1, 0, 1, 2, 16, 4097, Integer.MAX_VALUE, Integer.MAX_VALUE + 1L, Long.MIN_VALUE, "x", ""
  };

  /** A manifest whose every field is valid, missing, or a hostile value of any type. */
  private static byte[] hostileManifest(Random random) {
    Map<String, Object> fields = new java.util.LinkedHashMap<>();
    Object[][] valid = {
      {"segment", "vip"},
      {"version", 20},
      {"chunks", 1},
      {"bytes", 40},
      {"sha256", "0".repeat(64)},
      {"cardinality", 3},
      {"publishedAt", 0}
    };
    for (Object[] field : valid) {
      int pick = random.nextInt(4);
      if (pick == 0) {
        continue;
      }
      fields.put((String) field[0], pick == 1 ? HOSTILE[random.nextInt(HOSTILE.length)] : field[1]);
    }
    StringBuilder json = new StringBuilder("{");
    fields.forEach(
        (k, v) ->
            json.append(json.length() > 1 ? "," : "")
                .append('"')
                .append(k)
                .append("\":")
                .append(v instanceof String str ? "\"" + str + "\"" : v));
    return json.append('}').toString().getBytes(StandardCharsets.UTF_8);
  }

  private static SegmentRecords.Manifest manifest(byte[] json) {
    return SegmentRecords.Manifest.fromJson(json).check("vip");
  }

  /** Parses an input; fails naming it unless it gives a value or an IllegalArgumentException. */
  private static void parses(String which, byte[] input, Function<byte[], ?> parse) {
    ByteMutator.returnsOrThrows(
        which, input, IllegalArgumentException.class, ALLOCATION_BOUND, 16, parse::apply);
  }
}
