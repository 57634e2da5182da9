package io.sendcap.segment;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the records of the {@code segments} topic, in offset order, into a {@link SegmentRegistry}.
 *
 * <p>Chunks wait in a {@link ChunkStore} (the application's global store, or memory for the
 * command-line tools) until their manifest arrives. When a manifest arrives whose chunks are all
 * there, the version is assembled, checked against the manifest's length and SHA-256, and
 * installed; its chunks then leave the store, since the bitmap holds them.
 *
 * <p>Every record is hostile until checked. One that cannot be applied (no key, a key that is
 * neither a segment's name nor a chunk's {@code NAME/VERSION/INDEX}, a manifest that is not JSON or
 * claims what no version can be, chunks that do not match their manifest, a bitmap that cannot be
 * read) is skipped with one log line and reported to the listener with its {@link Reason}; the
 * version in force stays. Nothing is allocated from a size a record claims before that size is
 * checked against {@code maxBytes}, and the chunks waiting for manifests hold at most {@code
 * maxBytes} in all. Kafka Streams restores the global store by running its records through here
 * again, so a restart skips them the same way.
 */
public final class SegmentLoader {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentLoader.class);

  /** Why a record was skipped. */
  public enum Reason {
    /** No key, a key of neither form, or a manifest that is not JSON. */
    MALFORMED,
    /** A manifest whose fields no version can have, or that names another segment than its key. */
    INVALID,
    /** More bytes than {@code segments.max-bytes} allows, claimed or waiting. */
    TOO_LARGE,
    /** Chunks whose length or SHA-256 differ from their manifest's. */
    MISMATCH,
    /** Chunks that match their manifest but do not hold a bitmap. */
    UNREADABLE;

    /** The reason as a metric's label: lower case, words joined by '-'. */
    public String label() {
      return name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
  }

  /** Where chunks wait until their manifest arrives. */
  public interface ChunkStore extends SegmentRecords.ChunkSource {
    /** Keeps {@code chunk} under {@code key}. */
    void put(String key, byte[] chunk);

    /** Forgets the chunk stored under {@code key}. */
    void delete(String key);

    /** A store in {@code map}. */
    static ChunkStore of(Map<String, byte[]> map) {
      return of(map::get, map::put, map::remove);
    }

    /**
     * A store that reads with {@code get}, keeps with {@code put} and forgets with {@code delete}.
     */
    static ChunkStore of(
        Function<String, byte[]> get, BiConsumer<String, byte[]> put, Consumer<String> delete) {
      return new ChunkStore() {
        @Override
        public byte[] get(String key) {
          return get.apply(key);
        }

        @Override
        public void put(String key, byte[] chunk) {
          put.accept(key, chunk);
        }

        @Override
        public void delete(String key) {
          delete.accept(key);
        }
      };
    }
  }

  private final SegmentRegistry registry;
  private final long maxBytes;
  private final Consumer<Reason> onRejected;

  /** The manifests waiting for chunks, by segment, with their records' lengths. */
  private final Map<String, Waiting> waiting = new HashMap<>();

  /** The length of each chunk in the store, by key. */
  private final Map<String, Integer> stored = new HashMap<>();

  /** The bytes of the chunks in the store and of the manifests waiting for chunks. */
  private long storedBytes;

  private long rejected;

  private record Waiting(SegmentRecords.Manifest manifest, int length) {}

  /**
   * A loader that installs into {@code registry}.
   *
   * @param maxBytes the most bytes a manifest may claim, and the most bytes of chunks that may wait
   *     in the store, all segments together ({@code segments.max-bytes})
   * @param onRejected told the reason of each record skipped
   */
  public SegmentLoader(SegmentRegistry registry, long maxBytes, Consumer<Reason> onRejected) {
    this.registry = registry;
    this.maxBytes = maxBytes;
    this.onRejected = onRejected;
  }

  /** Handles one record of the topic; a null value is a tombstone. */
  public void onRecord(String key, byte[] value, ChunkStore store) {
    if (key == null) {
      reject(Reason.MALFORMED, "(no key)", "a record without a key");
    } else if (SegmentRecords.isManifestKey(key)) {
      if (value != null) {
        onManifest(key, value, store);
      }
    } else {
      onChunk(key, value, store);
    }
  }

  private void onManifest(String key, byte[] value, ChunkStore store) {
    SegmentRecords.Manifest manifest;
    try {
      manifest = SegmentRecords.Manifest.fromJson(value);
    } catch (IllegalArgumentException e) {
      reject(Reason.MALFORMED, key, e.getMessage());
      return;
    }
    try {
      manifest.check(key);
    } catch (IllegalArgumentException e) {
      reject(Reason.INVALID, key, e.getMessage());
      return;
    }
    if (manifest.bytes() > maxBytes) {
      reject(
          Reason.TOO_LARGE,
          key,
          "v"
              + manifest.version()
              + " claims "
              + manifest.bytes()
              + " bytes, more than "
              + maxBytes
              + " (segments.max-bytes)");
      return;
    }
    unwait(manifest.segment());
    if (!tryInstall(manifest, store)) {
      if (storedBytes + value.length > maxBytes) {
        reject(
            Reason.TOO_LARGE, key, "waiting records would hold more than " + maxBytes + " bytes");
        return;
      }
      waiting.put(manifest.segment(), new Waiting(manifest, value.length));
      storedBytes += value.length;
    }
  }

  private void unwait(String segment) {
    Waiting w = waiting.remove(segment);
    if (w != null) {
      storedBytes -= w.length();
    }
  }

  private void onChunk(String key, byte[] value, ChunkStore store) {
    SegmentRecords.ChunkKey chunk;
    try {
      chunk = SegmentRecords.ChunkKey.parse(key);
    } catch (IllegalArgumentException e) {
      reject(Reason.MALFORMED, key, e.getMessage());
      return;
    }
    if (value == null) {
      forget(key, store);
      return;
    }
    if (chunk.version() <= registry.version(chunk.segment())) {
      return; // a chunk of a version no newer than the one in force: never needed again
    }
    // A publisher writes a version's chunks, then its manifest: once a newer version's chunks
    // arrive, an older version whose manifest has not come never will.
    dropChunksUpTo(chunk.segment(), chunk.version() - 1, store);
    long held = storedBytes - stored.getOrDefault(key, 0);
    if (held + value.length > maxBytes) {
      reject(
          Reason.TOO_LARGE,
          key,
          "chunks waiting for their manifests would hold "
              + (held + value.length)
              + " bytes, more than "
              + maxBytes
              + " (segments.max-bytes)");
      return;
    }
    forget(key, store);
    store.put(key, value);
    stored.put(key, value.length);
    storedBytes += value.length;
    Waiting w = waiting.get(chunk.segment());
    // A chunk after its manifest: only if records were reordered.
    if (w != null && w.manifest().version() == chunk.version() && tryInstall(w.manifest(), store)) {
      unwait(chunk.segment());
    }
  }

  /**
   * Installs the version {@code manifest} describes if its chunks are all there; returns false if
   * one is missing, true if the manifest is done with (installed, stale or rejected).
   */
  private boolean tryInstall(SegmentRecords.Manifest manifest, ChunkStore store) {
    if (registry.version(manifest.segment()) >= manifest.version()) {
      return true;
    }
    byte[] bytes;
    try {
      bytes = SegmentRecords.assembleBytes(manifest, store);
    } catch (IllegalArgumentException e) {
      reject(Reason.MISMATCH, manifest.segment(), e.getMessage());
      return true;
    }
    if (bytes == null) {
      return false;
    }
    UserIds ids;
    try {
      ids = UserIds.readPortable(ByteBuffer.wrap(bytes));
    } catch (IllegalArgumentException e) {
      reject(
          Reason.UNREADABLE, manifest.segment(), "v" + manifest.version() + ": " + e.getMessage());
      return true;
    }
    registry.install(manifest, ids);
    dropChunksUpTo(manifest.segment(), manifest.version(), store);
    return true;
  }

  /** Drops the stored chunks of {@code segment} of {@code version} and older. */
  private void dropChunksUpTo(String segment, long version, ChunkStore store) {
    for (Iterator<Map.Entry<String, Integer>> i = stored.entrySet().iterator(); i.hasNext(); ) {
      Map.Entry<String, Integer> e = i.next();
      SegmentRecords.ChunkKey chunk = SegmentRecords.ChunkKey.parse(e.getKey());
      if (chunk.segment().equals(segment) && chunk.version() <= version) {
        store.delete(e.getKey());
        storedBytes -= e.getValue();
        i.remove();
      }
    }
  }

  private void forget(String key, ChunkStore store) {
    Integer length = stored.remove(key);
    if (length != null) {
      store.delete(key);
      storedBytes -= length;
    }
  }

  private void reject(Reason reason, String key, String why) {
    rejected++;
    LOG.error("segments topic: record {} skipped ({}): {}", key, reason.label(), why);
    onRejected.accept(reason);
  }

  /** How many records could not be used. */
  public long rejected() {
    return rejected;
  }

  /** How many bytes of chunks wait in the store for their manifests. */
  public long waitingBytes() {
    return storedBytes;
  }
}
