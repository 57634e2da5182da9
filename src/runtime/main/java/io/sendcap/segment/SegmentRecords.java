package io.sendcap.segment;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;

/**
 * How segments travel on the compacted {@code segments} topic.
 *
 * <p>One publish of segment {@code NAME} as version {@code V} writes its serialized bitmap (see
 * {@link UserIds}) in chunks under the keys {@code NAME/V/0}, {@code NAME/V/1}, ..., then a
 * manifest under the key {@code NAME}: the version, the number of chunks, the length and SHA-256 of
 * the whole, and the cardinality. Every record of a segment goes to one partition, so a reader sees
 * the chunks before the manifest. A reader uses a version only once its manifest has arrived and
 * every chunk matches it, so a half-arrived version is never used, and never goes back to an older
 * version. Compaction keeps the newest manifest of each segment; after publishing, the publisher
 * deletes (tombstones) the chunks of every other version, so they go too.
 */
public final class SegmentRecords {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");

  private SegmentRecords() {}

  /**
   * What a published version holds.
   *
   * @param segment the segment's name
   * @param version increases with every publish of the segment
   * @param chunks the number of chunk records
   * @param bytes the length of the serialized bitmap
   * @param sha256 its SHA-256, in hex
   * @param cardinality the number of users in the segment
   * @param publishedAt when the publish started, ms since the epoch
   */
  public record Manifest(
      String segment,
      long version,
      int chunks,
      long bytes,
      String sha256,
      long cardinality,
      long publishedAt) {

    /** The manifest as the JSON value of its record. */
    public byte[] toJson() {
      try {
        return JSON.writeValueAsBytes(this);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    /**
     * Reads a manifest record's value.
     *
     * @throws IllegalArgumentException if it is not a manifest's JSON
     */
    public static Manifest fromJson(byte[] json) {
      try {
        Manifest m = JSON.readValue(json, Manifest.class);
        if (m == null) {
          throw new IllegalArgumentException("not a segment manifest: null");
        }
        return m;
      } catch (IOException e) {
        throw new IllegalArgumentException("not a segment manifest: " + e.getMessage(), e);
      }
    }

    /**
     * Checks that this manifest, read under {@code key}, describes a version that can exist: its
     * own segment's name, a positive version, at least one chunk and no more chunks than bytes, a
     * SHA-256 in hex; returns it.
     *
     * @throws IllegalArgumentException naming the first field that cannot be
     */
    public Manifest check(String key) {
      if (segment == null || !segment.equals(key)) {
        throw new IllegalArgumentException(
            "the manifest under key " + key + " names segment " + segment);
      }
      requireName(segment);
      if (version < 1) {
        throw new IllegalArgumentException("version " + version + " is not positive");
      }
      if (chunks < 1 || bytes < 1 || chunks > bytes) {
        throw new IllegalArgumentException(
            chunks + " chunks of " + bytes + " bytes: at least 1 chunk of at least 1 byte each");
      }
      if (sha256 == null || !SHA256.matcher(sha256).matches()) {
        throw new IllegalArgumentException("sha256 is not 64 hexadecimal digits");
      }
      if (cardinality < 0) {
        throw new IllegalArgumentException("cardinality " + cardinality + " is negative");
      }
      return this;
    }
  }

  /**
   * The parts of a chunk's key, {@code NAME/VERSION/INDEX}.
   *
   * @param segment the segment's name
   * @param version the version the chunk belongs to, positive
   * @param index the chunk's place in the version, from 0
   */
  public record ChunkKey(String segment, long version, int index) {
    /**
     * Reads a chunk's key.
     *
     * @throws IllegalArgumentException if it is not {@code NAME/VERSION/INDEX} with a valid name, a
     *     positive version and an index from 0
     */
    public static ChunkKey parse(String key) {
      int first = key.indexOf('/');
      int second = first < 0 ? -1 : key.indexOf('/', first + 1);
      if (first <= 0 || second < 0 || key.indexOf('/', second + 1) >= 0) {
        throw new IllegalArgumentException("chunk key " + key + " is not NAME/VERSION/INDEX");
      }
      String segment = key.substring(0, first);
      try {
        requireName(segment);
        long version = Long.parseLong(key.substring(first + 1, second));
        int index = Integer.parseInt(key.substring(second + 1));
        if (version < 1 || index < 0) {
          throw new NumberFormatException("version " + version + ", index " + index);
        }
        return new ChunkKey(segment, version, index);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(
            "chunk key " + key + " is not NAME/VERSION/INDEX: " + e.getMessage(), e);
      }
    }
  }

  /** A record to write: key and value (a null value deletes the key). */
  public record Entry(String key, byte[] value) {}

  /** Whether {@code key} is a manifest's key (a chunk's key holds a '/'). */
  public static boolean isManifestKey(String key) {
    return key.indexOf('/') < 0;
  }

  /** The key of chunk {@code index} of {@code version} of {@code segment}. */
  public static String chunkKey(String segment, long version, int index) {
    return segment + "/" + version + "/" + index;
  }

  /**
   * The records that publish {@code ids} as {@code version} of {@code segment}: the chunks of at
   * most {@code chunkBytes} bytes each, then the manifest.
   */
  public static List<Entry> publish(
      String segment, long version, UserIds ids, int chunkBytes, long publishedAt) {
    requireName(segment);
    byte[] bytes = ids.toPortableBytes();
    int chunks = Math.max(1, (bytes.length + chunkBytes - 1) / chunkBytes);
    List<Entry> entries = new ArrayList<>(chunks + 1);
    for (int i = 0; i < chunks; i++) {
      int from = i * chunkBytes;
      int to = Math.min(bytes.length, from + chunkBytes);
      byte[] chunk = new byte[to - from];
      System.arraycopy(bytes, from, chunk, 0, chunk.length);
      entries.add(new Entry(chunkKey(segment, version, i), chunk));
    }
    Manifest manifest =
        new Manifest(
            segment, version, chunks, bytes.length, sha256(bytes), ids.cardinality(), publishedAt);
    entries.add(new Entry(segment, manifest.toJson()));
    return entries;
  }

  /**
   * The serialized bitmap a manifest describes, from its chunks, or null if a chunk is missing.
   * Nothing is allocated for the whole until the chunks' lengths add up to the manifest's.
   *
   * @param manifest a manifest that passed {@link Manifest#check}
   * @throws IllegalArgumentException if the chunks do not match the manifest's length and SHA-256
   */
  public static byte[] assembleBytes(Manifest manifest, ChunkSource chunks) {
    List<byte[]> parts = new ArrayList<>(Math.min(manifest.chunks(), 1024));
    long length = 0;
    for (int i = 0; i < manifest.chunks(); i++) {
      byte[] chunk = chunks.get(chunkKey(manifest.segment(), manifest.version(), i));
      if (chunk == null) {
        return null;
      }
      parts.add(chunk);
      length += chunk.length;
    }
    if (length != manifest.bytes()) {
      throw new IllegalArgumentException(
          "segment "
              + manifest.segment()
              + " v"
              + manifest.version()
              + ": its chunks hold "
              + length
              + " bytes, its manifest says "
              + manifest.bytes());
    }
    byte[] all = new byte[(int) length];
    int at = 0;
    for (byte[] part : parts) {
      System.arraycopy(part, 0, all, at, part.length);
      at += part.length;
    }
    if (!sha256(all).equals(manifest.sha256())) {
      throw new IllegalArgumentException(
          "segment "
              + manifest.segment()
              + " v"
              + manifest.version()
              + ": chunks do not match the manifest's SHA-256");
    }
    return all;
  }

  /** Where {@link #assembleBytes} finds chunks by key. */
  public interface ChunkSource {
    /** The chunk stored under {@code key}, or null. */
    byte[] get(String key);
  }

  /** Checks that a segment name can be a key: not empty, no '/'. */
  public static String requireName(String segment) {
    if (segment == null) {
      throw new IllegalArgumentException("a segment needs a name");
    }
    if (segment.isEmpty() || segment.indexOf('/') >= 0 || !segment.strip().equals(segment)) {
      throw new IllegalArgumentException(
          "segment name \"" + segment + "\" must be non-empty, without '/' or surrounding spaces");
    }
    return segment;
  }

  /** The key bytes of a record. */
  public static byte[] keyBytes(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  /** The key of a record's bytes. */
  public static String key(byte[] keyBytes) {
    return new String(keyBytes, StandardCharsets.UTF_8);
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime provides SHA-256", e);
    }
  }
}
