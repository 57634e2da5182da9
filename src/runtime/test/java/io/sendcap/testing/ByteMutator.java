package io.sendcap.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

/**
 * A seeded byte-level mutator for fuzzing parsers of outside bytes: from valid inputs it makes
 * hostile ones by bit flips, interesting bytes, truncation, insertion, splicing two inputs, huge
 * claimed lengths (10-byte varints) and deep nesting (runs of one byte). The same seed makes the
 * same input, so a failure is replayed from the seed its message prints.
 *
 * <p>How many inputs a fuzz test tries is {@code -Dfuzz.iterations=N} ({@link #iterations(int)});
 * the seed of the first is {@code -Dfuzz.seed=S}, by default fixed so that the test command is
 * deterministic.
 */
public final class ByteMutator {
  private static final byte[] INTERESTING = {
    0, 1, 2, 0x7F, (byte) 0x80, (byte) 0xFF, (byte) 0xC3, '[', '{', '"', '\\'
  };

  private final List<byte[]> seeds;

  /** A mutator of the given valid inputs. */
  public ByteMutator(List<byte[]> seeds) {
    if (seeds.isEmpty()) {
      throw new IllegalArgumentException("no seed inputs");
    }
    this.seeds = List.copyOf(seeds);
  }

  /** How many inputs to try: {@code -Dfuzz.iterations}, or {@code byDefault}. */
  public static int iterations(int byDefault) {
    return Integer.getInteger("fuzz.iterations", byDefault);
  }

  /** The seed of the first input: {@code -Dfuzz.seed}, or a fixed one. */
  public static long firstSeed() {
    return Long.getLong("fuzz.seed", 0x5E4DCAB0L);
  }

  /** The input of a seed: one of the valid inputs, mutated one to four times. */
  public byte[] input(long seed) {
    Random random = new Random(seed);
    byte[] bytes = seeds.get(random.nextInt(seeds.size())).clone();
    for (int n = 1 + random.nextInt(4); n > 0; n--) {
      bytes = mutate(bytes, random);
    }
    return bytes;
  }

  private byte[] mutate(byte[] bytes, Random random) {
    int at = bytes.length == 0 ? 0 : random.nextInt(bytes.length);
    switch (random.nextInt(8)) {
      case 0 -> {
        if (bytes.length > 0) {
          bytes[at] ^= (byte) (1 << random.nextInt(8));
        }
      }
      case 1 -> {
        if (bytes.length > 0) {
          bytes[at] = INTERESTING[random.nextInt(INTERESTING.length)];
        }
      }
      case 2 -> bytes = Arrays.copyOf(bytes, at);
      case 3 -> bytes = insert(bytes, at, randomBytes(random, 1 + random.nextInt(8)));
      case 4 -> {
        byte[] other = seeds.get(random.nextInt(seeds.size()));
        int from = other.length == 0 ? 0 : random.nextInt(other.length);
        bytes = insert(Arrays.copyOf(bytes, at), at, Arrays.copyOfRange(other, from, other.length));
      }
      case 5 -> bytes = insert(bytes, at, varint(hugeLength(random)));
      case 6 -> {
        byte[] run = new byte[1 + random.nextInt(random.nextBoolean() ? 64 : 100_000)];
        Arrays.fill(
            run, random.nextBoolean() ? (byte) 2 : INTERESTING[random.nextInt(INTERESTING.length)]);
        bytes = insert(bytes, at, run);
      }
      default -> {
        if (bytes.length > 0) {
          bytes[at] = (byte) random.nextInt(256);
        }
      }
    }
    return bytes;
  }

  private static long hugeLength(Random random) {
    return switch (random.nextInt(4)) {
      case 0 -> Integer.MAX_VALUE;
      case 1 -> Long.MAX_VALUE / 2;
      case 2 -> 1L << (20 + random.nextInt(40));
      default -> -(1L << random.nextInt(62));
    };
  }

  /** Avro's zig-zag varint of a long. */
  public static byte[] varint(long value) {
    long zigzag = (value << 1) ^ (value >> 63);
    byte[] out = new byte[10];
    int n = 0;
    while ((zigzag & ~0x7FL) != 0) {
      out[n++] = (byte) ((zigzag & 0x7F) | 0x80);
      zigzag >>>= 7;
    }
    out[n++] = (byte) zigzag;
    return Arrays.copyOf(out, n);
  }

  private static byte[] randomBytes(Random random, int n) {
    byte[] bytes = new byte[n];
    random.nextBytes(bytes);
    return bytes;
  }

  private static byte[] insert(byte[] bytes, int at, byte[] inserted) {
    byte[] out = new byte[bytes.length + inserted.length];
    System.arraycopy(bytes, 0, out, 0, at);
    System.arraycopy(inserted, 0, out, at, inserted.length);
    System.arraycopy(bytes, at, out, at + inserted.length, bytes.length - at);
    return out;
  }

  /** Every file of a corpus directory on the test classpath ({@code fuzz/<parser>}), by name. */
  public static List<Path> corpus(String parser) {
    Path dir;
    try {
      dir = Path.of(ByteMutator.class.getResource("/fuzz/" + parser).toURI());
    } catch (java.net.URISyntaxException | NullPointerException e) {
      throw new IllegalStateException("no corpus fuzz/" + parser + " on the test classpath", e);
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The bytes of a corpus file. */
  public static byte[] read(Path file) {
    try {
      return Files.readAllBytes(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** An input in hex, its first 256 bytes, for a failure's message. */
  public static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(bytes, 0, Math.min(256, bytes.length))
        + (bytes.length > 256 ? "... (" + bytes.length + " bytes)" : "");
  }

  /** The inputs of several corpora and extra valid inputs, as seeds. */
  public static List<byte[]> seeds(List<Path> corpus, List<byte[]> more) {
    List<byte[]> seeds = new ArrayList<>(more);
    corpus.forEach(f -> seeds.add(read(f)));
    return seeds;
  }

  /** A parser under test, given one input; it may throw anything, for the check to judge. */
  @FunctionalInterface
  public interface Parse {
    /** Parses {@code input}. */
    void apply(byte[] input) throws Exception;
  }

  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

  /**
   * The property every fuzz test checks on each input: {@code parse} returns or throws {@code
   * declared}, never anything else, and allocates at most {@code bound} bytes plus {@code perByte}
   * for each byte of the input; otherwise the test fails naming {@code which} (the seed, or the
   * corpus file) and the input.
   */
  public static void returnsOrThrows(
      String which,
      byte[] input,
      Class<? extends Throwable> declared,
      long bound,
      int perByte,
      Parse parse) {
    long before = THREADS.getCurrentThreadAllocatedBytes();
    try {
      parse.apply(input);
    } catch (Throwable t) {
      if (!declared.isInstance(t)) {
        throw new AssertionError(which + " threw " + t + " on " + hex(input), t);
      }
    }
    long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
    if (allocated > bound + (long) perByte * input.length) {
      throw new AssertionError(which + " allocated " + allocated + " bytes on " + hex(input));
    }
  }
}
