package io.sendcap.segment;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

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

    /** Reads a manifest record's value. */
    public static Manifest fromJson(byte[] json) {
      try {
        return JSON.readValue(json, Manifest.class);
      } catch (IOException e) {
        throw new IllegalArgumentException("not a segment manifest: " + e.getMessage(), e);
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

  /** The segment a chunk key belongs to. */
  public static String segmentOfChunk(String chunkKey) {
    return chunkKey.substring(0, chunkKey.indexOf('/'));
  }

  /** The version a chunk key belongs to. */
  public static long versionOfChunk(String chunkKey) {
    int first = chunkKey.indexOf('/');
    return Long.parseLong(chunkKey.substring(first + 1, chunkKey.indexOf('/', first + 1)));
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
   * Assembles the version a manifest describes from its chunks, or returns null if a chunk is
   * missing; fails if the chunks do not match the manifest.
   */
  public static UserIds assemble(Manifest manifest, ChunkSource chunks) {
    byte[] all = new byte[Math.toIntExact(manifest.bytes())];
    int at = 0;
    for (int i = 0; i < manifest.chunks(); i++) {
      byte[] chunk = chunks.get(chunkKey(manifest.segment(), manifest.version(), i));
      if (chunk == null) {
        return null;
      }
      if (at + chunk.length > all.length) {
        throw new IllegalArgumentException(
            "segment "
                + manifest.segment()
                + " v"
                + manifest.version()
                + ": chunks exceed "
                + manifest.bytes()
                + " bytes");
      }
      System.arraycopy(chunk, 0, all, at, chunk.length);
      at += chunk.length;
    }
    if (at != all.length || !sha256(all).equals(manifest.sha256())) {
      throw new IllegalArgumentException(
          "segment "
              + manifest.segment()
              + " v"
              + manifest.version()
              + ": chunks do not match the manifest's length and SHA-256");
    }
    return UserIds.readPortable(ByteBuffer.wrap(all));
  }

  /** Where {@link #assemble} finds chunks by key. */
  public interface ChunkSource {
    /** The chunk stored under {@code key}, or null. */
    byte[] get(String key);
  }

  /** Checks that a segment name can be a key: not empty, no '/'. */
  public static String requireName(String segment) {
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
