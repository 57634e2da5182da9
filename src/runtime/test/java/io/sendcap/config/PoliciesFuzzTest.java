package io.sendcap.config;

import io.sendcap.testing.ByteMutator;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Fuzzes the policy file's parser, which reads what {@code policies publish} put on the policies
 * topic as well as the file of {@code policies.file}: the corpus in {@code fuzz/policies} (valid
 * files using every key, and hostile ones: an alias bomb, nesting 200 deep; add there what a long
 * run finds) replayed and mutated byte by byte ({@link ByteMutator}), and policies generated from
 * the grammar with every value drawn from a set of hostile ones. The property: parsing returns
 * policies or throws {@link InvalidConfigException}, never anything else, and allocates no more
 * than a bound.
 *
 * <p>A longer run: {@code mvn -pl src/runtime test -Dtest=PoliciesFuzzTest
 * -Dfuzz.iterations=1000000} (and {@code -Dfuzz.seed=S} for other inputs); a failure prints the
 * seed that makes its input again.
 */
class PoliciesFuzzTest {
  private static final int ITERATIONS = ByteMutator.iterations(1_000);
  private static final long ALLOCATION_BOUND = 64L << 20;
  private static final String[] VALUES = {
    "1d", "0", "-1", "2147483648", "99999999999999999999", "1e9", "3651d", "calendar-week", "[]",
    "{}", "null", "~", "''", "push", "PUSH", "token-bucket", "sliding-window", "Mars/Olympus",
    "+18:00", "[1d]", "{a: b}", "*x", "!!binary AAAA", "\"\\u0000\"", "x" + "y".repeat(300)
  };
  private static final String[] KEYS = {
    "name",
    "caps",
    "window",
    "limit",
    "channel",
    "algorithm",
    "min-interval",
    "zone",
    "per",
    "campaign",
    "max-batch",
    "extra"
  };

  @Test
  void theCorpusAndItsMutationsParseToPoliciesOrTheirDeclaredError() {
    List<Path> corpus = ByteMutator.corpus("policies");
    for (Path file : corpus) {
      parses("corpus " + file, ByteMutator.read(file));
    }
    ByteMutator mutator = new ByteMutator(ByteMutator.seeds(corpus, List.of()));
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      parses("seed " + seed, mutator.input(seed));
    }
  }

  @Test
  void generatedPoliciesParseToPoliciesOrTheirDeclaredError() {
    long first = ByteMutator.firstSeed();
    for (long seed = first; seed < first + ITERATIONS; seed++) {
      parses("seed " + seed, generated(new Random(seed)).getBytes(StandardCharsets.UTF_8));
    }
  }

  /** A policy file of the grammar's shape, its keys and values drawn at random. */
  private static String generated(Random random) {
    StringBuilder yaml = new StringBuilder("segments:\n");
    for (int s = random.nextInt(3); s > 0; s--) {
      yaml.append("  - name: ").append(value(random)).append('\n');
      yaml.append("    caps:\n");
      caps(random, yaml, "      ");
      if (random.nextBoolean()) {
        yaml.append("    ").append(key(random)).append(": ").append(value(random)).append('\n');
      }
    }
    yaml.append("default:\n  caps:\n");
    caps(random, yaml, "    ");
    if (random.nextBoolean()) {
      yaml.append("global:\n");
      for (int g = random.nextInt(3); g >= 0; g--) {
        yaml.append("  - {name: ").append(value(random));
        for (int k = random.nextInt(5); k > 0; k--) {
          yaml.append(", ").append(key(random)).append(": ").append(value(random));
        }
        yaml.append("}\n");
      }
    }
    return yaml.toString();
  }

  private static void caps(Random random, StringBuilder yaml, String indent) {
    for (int c = random.nextInt(4); c >= 0; c--) {
      yaml.append(indent).append("- {window: ").append(value(random));
      yaml.append(", limit: ").append(value(random));
      for (int k = random.nextInt(3); k > 0; k--) {
        yaml.append(", ").append(key(random)).append(": ").append(value(random));
      }
      yaml.append("}\n");
    }
  }

  private static String value(Random random) {
    return VALUES[random.nextInt(VALUES.length)];
  }

  private static String key(Random random) {
    return KEYS[random.nextInt(KEYS.length)];
  }

  /** Parses an input; fails naming it unless it gives policies or an InvalidConfigException. */
  private static void parses(String which, byte[] input) {
    ByteMutator.returnsOrThrows(
        which,
        input,
        InvalidConfigException.class,
        ALLOCATION_BOUND,
        64,
        in -> Policies.parse(new String(in, StandardCharsets.UTF_8), "fuzz"));
  }
}
