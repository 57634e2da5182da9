package io.sendcap.serde;

import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.kafka.common.config.ConfigException;

/**
 * The bounds on what a writer's schema and a record may make a deserializer do: how many bytes of
 * schema text it parses ({@value #MAX_SCHEMA_BYTES}) and how deep records, arrays and maps may nest
 * ({@value #MAX_DEPTH}), in a schema and in the data it describes.
 *
 * <p>A recursive schema is legal Avro (a record holding an optional record of its own type), so its
 * data can nest as deep as its bytes allow, and Avro's decoder recurses once per level: 200,000
 * levels overflow a thread's stack. A record written with such a schema, or with one whose arrays
 * or maps hold items that take no bytes, is first walked here without recursion beyond the bound,
 * every claimed length checked against the bytes left (see {@link #check(Schema, byte[], int,
 * int)}); then Avro decodes it. Records of every other schema nest no deeper than the schema, which
 * {@link #refusal(Schema)} bounds, and Avro 1.12 checks their claimed lengths itself.
 *
 * @param maxSchemaBytes the most bytes of schema text (UTF-8) a writer's schema may have
 * @param maxDepth how deep records, arrays and maps may nest in a writer's schema and in a record
 */
public record AvroLimits(int maxSchemaBytes, int maxDepth) {
  /** The key of {@link #maxSchemaBytes()}. */
  public static final String MAX_SCHEMA_BYTES = "avro.max-schema-bytes";

  /** The key of {@link #maxDepth()}. */
  public static final String MAX_DEPTH = "avro.max-depth";

  /** The default of {@link #MAX_SCHEMA_BYTES}: 1 MiB. */
  public static final int DEFAULT_MAX_SCHEMA_BYTES = 1 << 20;

  /** The default of {@link #MAX_DEPTH}. */
  public static final int DEFAULT_MAX_DEPTH = 64;

  /** The greatest {@link #MAX_SCHEMA_BYTES}: 64 MiB. */
  public static final int MAX_MAX_SCHEMA_BYTES = 64 << 20;

  /** The greatest {@link #MAX_DEPTH}: deeper, Avro's own recursion nears a thread's stack. */
  public static final int MAX_MAX_DEPTH = 1_000;

  /** The defaults. */
  public static final AvroLimits DEFAULT =
      new AvroLimits(DEFAULT_MAX_SCHEMA_BYTES, DEFAULT_MAX_DEPTH);

  /** Creates the limits, each within its allowed range. */
  public AvroLimits {
    if (maxSchemaBytes < 1 || maxSchemaBytes > MAX_MAX_SCHEMA_BYTES) {
      throw new ConfigException(
          MAX_SCHEMA_BYTES, maxSchemaBytes, "a whole number from 1 to " + MAX_MAX_SCHEMA_BYTES);
    }
    if (maxDepth < 1 || maxDepth > MAX_MAX_DEPTH) {
      throw new ConfigException(MAX_DEPTH, maxDepth, "a whole number from 1 to " + MAX_MAX_DEPTH);
    }
  }

  /**
   * Reads the limits from Kafka-style configs, as a serde's {@code configure} receives them; a key
   * not set takes its default.
   *
   * @throws ConfigException naming the key, its value and what is allowed
   */
  public static AvroLimits from(Map<String, ?> configs) {
    return new AvroLimits(
        integer(configs, MAX_SCHEMA_BYTES, DEFAULT_MAX_SCHEMA_BYTES, MAX_MAX_SCHEMA_BYTES),
        integer(configs, MAX_DEPTH, DEFAULT_MAX_DEPTH, MAX_MAX_DEPTH));
  }

  private static int integer(Map<String, ?> configs, String key, int defaultValue, int max) {
    Object value = configs.get(key);
    if (value == null || String.valueOf(value).isBlank()) {
      return defaultValue;
    }
    try {
      return Integer.parseInt(String.valueOf(value).trim());
    } catch (NumberFormatException e) {
      throw new ConfigException(key, value, "a whole number from 1 to " + max);
    }
  }

  /** These limits as the configs {@link #from} reads. */
  public Map<String, String> configs() {
    return Map.of(
        MAX_SCHEMA_BYTES, String.valueOf(maxSchemaBytes), MAX_DEPTH, String.valueOf(maxDepth));
  }

  /** Why a writer's schema text is refused before it is parsed: too many bytes; empty if not. */
  public Optional<String> refusal(String schemaText) {
    long bytes =
        schemaText.length() > maxSchemaBytes
            ? schemaText.getBytes(StandardCharsets.UTF_8).length
            : schemaText.length();
    return bytes > maxSchemaBytes
        ? Optional.of(
            "its schema has "
                + bytes
                + " bytes, more than "
                + MAX_SCHEMA_BYTES
                + "="
                + maxSchemaBytes)
        : Optional.empty();
  }

  /**
   * Why a writer's schema is refused: it nests records, arrays and maps deeper than {@link
   * #maxDepth()} without recursion, or its text is longer than {@link #maxSchemaBytes()}; empty if
   * it is not. A recursive schema is not refused for recursing.
   */
  public Optional<String> refusal(Schema schema) {
    Optional<String> size = refusal(schema.toString());
    if (size.isPresent()) {
      return size;
    }
    int depth = depth(schema, new HashSet<>(), 1);
    return depth > maxDepth
        ? Optional.of(
            "its schema nests records, arrays and maps more than "
                + MAX_DEPTH
                + "="
                + maxDepth
                + " deep")
        : Optional.empty();
  }

  /** How deep a schema nests, counting each record, array and map; stops past the bound. */
  private int depth(Schema schema, Set<Schema> path, int level) {
    if (level > maxDepth) {
      return level;
    }
    return switch (schema.getType()) {
      case RECORD -> {
        if (!path.add(schema)) {
          yield 0; // recursion: its data is bounded when read (check)
        }
        int deepest = level;
        for (Schema.Field f : schema.getFields()) {
          deepest = Math.max(deepest, depth(f.schema(), path, level + 1));
        }
        path.remove(schema);
        yield deepest;
      }
      case ARRAY -> depth(schema.getElementType(), path, level + 1);
      case MAP -> depth(schema.getValueType(), path, level + 1);
      case UNION -> {
        int deepest = 0;
        for (Schema branch : schema.getTypes()) {
          deepest = Math.max(deepest, depth(branch, path, level));
        }
        yield deepest;
      }
      default -> level - 1;
    };
  }

  /**
   * Whether records of a writer's schema are walked by {@link #check} before Avro decodes them: the
   * schema is recursive, or an array or map of it holds items that may take no bytes (so that a few
   * bytes can claim billions of them).
   */
  public static boolean needsCheck(Schema schema) {
    return risky(schema, new HashSet<>(), new ArrayDeque<>());
  }

  private static boolean risky(Schema schema, Set<Schema> done, Deque<Schema> path) {
    switch (schema.getType()) {
      case RECORD -> {
        if (path.contains(schema)) {
          return true;
        }
        if (!done.add(schema)) {
          return false;
        }
        path.push(schema);
        try {
          for (Schema.Field f : schema.getFields()) {
            if (risky(f.schema(), done, path)) {
              return true;
            }
          }
          return false;
        } finally {
          path.pop();
        }
      }
      case ARRAY -> {
        return mayBeEmpty(schema.getElementType(), new HashSet<>())
            || risky(schema.getElementType(), done, path);
      }
      case MAP -> {
        return risky(schema.getValueType(), done, path);
      }
      case UNION -> {
        for (Schema branch : schema.getTypes()) {
          if (risky(branch, done, path)) {
            return true;
          }
        }
        return false;
      }
      default -> {
        return false;
      }
    }
  }

  /** Whether a value of the schema may be encoded in no bytes at all. */
  private static boolean mayBeEmpty(Schema schema, Set<Schema> seen) {
    return switch (schema.getType()) {
      case NULL -> true;
      case FIXED -> schema.getFixedSize() == 0;
      case RECORD -> {
        if (!seen.add(schema)) {
          yield false;
        }
        yield schema.getFields().stream().allMatch(f -> mayBeEmpty(f.schema(), seen));
      }
      default -> false;
    };
  }

  /**
   * Walks the Avro binary record in {@code bytes[offset, offset + length)} as {@code schema}
   * describes it, without building it: it nests no deeper than {@link #maxDepth()}, every string,
   * bytes, array and map claims no more than the bytes left, every union branch and enum symbol
   * exists, and its collections hold no more items in all than it has bytes.
   *
   * @throws IOException if the record ends before its schema says it does
   * @throws AvroRuntimeException naming what exceeds which bound
   */
  public void check(Schema schema, byte[] bytes, int offset, int length) throws IOException {
    new Walk(bytes, offset, offset + length).value(schema, 0);
  }

  /** One walk of a record: a cursor over its bytes and the collection items it may still hold. */
  private final class Walk {
    private final byte[] bytes;
    private final int end;
    private int pos;
    private long items;

    Walk(byte[] bytes, int offset, int end) {
      if (offset < 0 || end > bytes.length || offset > end) {
        throw new IllegalArgumentException("a range outside the bytes");
      }
      this.bytes = bytes;
      this.pos = offset;
      this.end = end;
      this.items = end - offset;
    }

    void value(Schema schema, int depth) throws IOException {
      switch (schema.getType()) {
        case NULL -> {}
        case BOOLEAN -> skip(1);
        case INT, LONG -> varint();
        case FLOAT -> skip(4);
        case DOUBLE -> skip(8);
        case STRING, BYTES -> skip(length("a string or bytes"));
        case FIXED -> skip(schema.getFixedSize());
        case ENUM -> index(schema.getEnumSymbols().size(), "enum symbol");
        case UNION -> {
          List<Schema> branches = schema.getTypes();
          value(branches.get(index(branches.size(), "union branch")), depth);
        }
        case RECORD -> {
          enter(depth);
          for (Schema.Field f : schema.getFields()) {
            value(f.schema(), depth + 1);
          }
        }
        case ARRAY -> collection(schema.getElementType(), false, depth);
        case MAP -> collection(schema.getValueType(), true, depth);
      }
    }

    private void collection(Schema items, boolean map, int depth) throws IOException {
      enter(depth);
      for (long count = varint(); count != 0; count = varint()) {
        if (count < 0) {
          count = -count;
          length("an array or map block");
        }
        if (count > this.items || count > end - pos) {
          throw new AvroRuntimeException(
              "an array or map claims "
                  + count
                  + " items, more than the "
                  + (end - pos)
                  + " bytes left could hold");
        }
        this.items -= count;
        for (long i = 0; i < count; i++) {
          if (map) {
            skip(length("a map key"));
          }
          value(items, depth + 1);
        }
      }
    }

    private void enter(int depth) {
      if (depth >= maxDepth) {
        throw new AvroRuntimeException(
            "records, arrays and maps nest more than " + MAX_DEPTH + "=" + maxDepth + " deep");
      }
    }

    private int index(int size, String what) throws IOException {
      long index = varint();
      if (index < 0 || index >= size) {
        throw new AvroRuntimeException(what + " " + index + " does not exist");
      }
      return (int) index;
    }

    private long length(String what) throws IOException {
      long length = varint();
      if (length < 0 || length > end - pos) {
        throw new AvroRuntimeException(
            what + " claims " + length + " bytes, " + (end - pos) + " are left");
      }
      return length;
    }

    private void skip(long n) throws EOFException {
      if (n > end - pos) {
        throw new EOFException("the record ends " + (n - (end - pos)) + " byte(s) early");
      }
      pos += (int) n;
    }

    /** A zig-zag varint of at most 10 bytes. */
    private long varint() throws IOException {
      long raw = 0;
      for (int shift = 0; shift < 70; shift += 7) {
        if (pos >= end) {
          throw new EOFException("the record ends inside a number");
        }
        int b = bytes[pos++] & 0xFF;
        raw |= (long) (b & 0x7F) << shift;
        if ((b & 0x80) == 0) {
          return (raw >>> 1) ^ -(raw & 1);
        }
      }
      throw new AvroRuntimeException("a number longer than 10 bytes");
    }
  }
}
