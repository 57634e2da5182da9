package io.sendcap.cli;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.testing.ByteMutator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes how {@code produce} reads a line of its JSON lines file into a send: the corpus in {@code
 * fuzz/produce-json} (a line of every field, nulls, relative times, huge numbers, nesting 3,000
 * deep; add there what a long run finds) replayed and mutated byte by byte ({@link ByteMutator}).
 * The property: a line gives a send or a {@link AvroJson.JsonMismatchException} that says what is
 * wrong, never anything else, and allocates no more than a bound.
 *
 * <p>A longer run: {@code mvn -pl src/runtime test -Dtest=ProduceJsonFuzzTest
 * -Dfuzz.iterations=1000000} (and {@code -Dfuzz.seed=S} for other inputs); a failure prints the
 * seed that makes its input again.
 */
class ProduceJsonFuzzTest {
  private static final int ITERATIONS = ByteMutator.iterations(5_000);
  private static final long ALLOCATION_BOUND = 16L << 20;
  private static final Instant NOW = Instant.parse("2026-11-02T09:00:00Z");

  @Test
  void theCorpusAndItsMutationsReadToASendOrTheirDeclaredError() {
    List<Path> corpus = ByteMutator.corpus("produce-json");
    for (Path file : corpus) {
      reads("corpus " + file, ByteMutator.read(file));
    }
    ByteMutator mutator = new ByteMutator(ByteMutator.seeds(corpus, List.of()));
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      reads("seed " + seed, mutator.input(seed));
    }
  }

  /** Reads an input; fails naming it unless it gives a send or a JsonMismatchException. */
  private static void reads(String which, byte[] input) {
    ByteMutator.returnsOrThrows(
        which,
        input,
        AvroJson.JsonMismatchException.class,
        ALLOCATION_BOUND,
        64,
        in -> AvroJson.read(new String(in, StandardCharsets.UTF_8), ScheduledSend.class, NOW));
  }
}
