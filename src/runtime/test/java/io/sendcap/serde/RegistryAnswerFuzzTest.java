package io.sendcap.serde;

import io.sendcap.testing.ByteMutator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.avro.Schema;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes how sendcap reads a schema registry's answers: the body of {@code GET /schemas/ids/{id}}
 * (JSON, then the Avro schema in it, then the bounds of {@link AvroLimits} on that schema) and the
 * registry's error bodies. The corpus in {@code fuzz/registry-answer} is replayed as it is and
 * mutated byte by byte ({@link ByteMutator}). The property: a schema or a {@link
 * SchemaRegistryException} ("this schema cannot be read", for that id), never anything else, and no
 * more memory than a bound proportional to the answer (whose size {@link
 * SchemaRegistrySettings#MAX_RESPONSE_BYTES} bounds).
 *
 * <p>A longer run: {@code mvn -pl src/runtime test -Dtest=RegistryAnswerFuzzTest
 * -Dfuzz.iterations=1000000}; a failure prints the seed that makes its input again.
 */
class RegistryAnswerFuzzTest {
  private static final int ITERATIONS = ByteMutator.iterations(500);
  private static final long ALLOCATION_BOUND = 16L << 20;

  /** Loads and initialises the classes of Avro's parser first, which the bound is not about. */
  @BeforeAll
  static void warmUp() {
    for (Path file : ByteMutator.corpus("registry-answer")) {
      try {
        SchemaRegistryClient.readSchemaAnswer(7, Files.readString(file));
      } catch (Exception e) {
        // only warming up
      }
    }
  }

  @Test
  void theCorpusIsASchemaOrOneThatCannotBeRead() {
    for (Path file : ByteMutator.corpus("registry-answer")) {
      reads("corpus " + file, ByteMutator.read(file));
    }
  }

  @Test
  void mutatedAnswersAreASchemaOrOneThatCannotBeRead() {
    ByteMutator mutator =
        new ByteMutator(ByteMutator.seeds(ByteMutator.corpus("registry-answer"), List.of()));
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      reads("seed " + seed, mutator.input(seed));
    }
  }

  private static void reads(String which, byte[] input) {
    ByteMutator.returnsOrThrows(
        which,
        input,
        SchemaRegistryException.class,
        ALLOCATION_BOUND,
        64,
        in -> {
          String body = new String(in, StandardCharsets.UTF_8);
          SchemaRegistryClient.error(body);
          SchemaRegistryClient.errorCode(404, body);
          Schema schema = SchemaRegistryClient.readSchemaAnswer(7, body);
          AvroLimits.DEFAULT.refusal(schema);
          AvroLimits.needsCheck(schema);
        });
  }
}
