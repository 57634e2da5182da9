package io.sendcap.segment;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads the records of the {@code segments} topic, in offset order, into a {@link SegmentRegistry}.
 *
 * <p>The caller keeps chunks in a {@link ChunkStore} (the application's global store, or memory for
 * the command-line tools) and passes each record here after storing it. When a manifest arrives
 * whose chunks are all there, the version is assembled, checked against the manifest's length and
 * SHA-256, and installed; its chunks are then dropped from the store, since the bitmap holds them.
 * A record that cannot be read is logged and skipped: one bad publish must not stop the others.
 */
public final class SegmentLoader {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentLoader.class);

  /** Where chunks wait until their manifest arrives. */
  public interface ChunkStore extends SegmentRecords.ChunkSource {
    /** Forgets the chunk stored under {@code key}. */
    void delete(String key);

    /** A store that reads with {@code get} and forgets with {@code delete}. */
    static ChunkStore of(Function<String, byte[]> get, Consumer<String> delete) {
      return new ChunkStore() {
        @Override
        public byte[] get(String key) {
          return get.apply(key);
        }

        @Override
        public void delete(String key) {
          delete.accept(key);
        }
      };
    }
  }

  private final SegmentRegistry registry;
  private final Map<String, SegmentRecords.Manifest> waiting = new HashMap<>();
  private long rejected;

  /** A loader that installs into {@code registry}. */
  public SegmentLoader(SegmentRegistry registry) {
    this.registry = registry;
  }

  /** Handles one record of the topic, already applied to {@code store}; null value: a tombstone. */
  public void onRecord(String key, byte[] value, ChunkStore store) {
    if (value == null) {
      return;
    }
    SegmentRecords.Manifest manifest;
    if (SegmentRecords.isManifestKey(key)) {
      try {
        manifest = SegmentRecords.Manifest.fromJson(value);
      } catch (IllegalArgumentException e) {
        reject(key, e);
        return;
      }
    } else {
      // A chunk after its manifest: possible only if records were reordered; try again then.
      manifest = waiting.get(SegmentRecords.segmentOfChunk(key));
      if (manifest == null) {
        return;
      }
    }
    tryInstall(manifest, store);
  }

  private void tryInstall(SegmentRecords.Manifest manifest, ChunkStore store) {
    if (registry.version(manifest.segment()) >= manifest.version()) {
      return;
    }
    UserIds ids;
    try {
      ids = SegmentRecords.assemble(manifest, store);
    } catch (IllegalArgumentException e) {
      reject(manifest.segment(), e);
      return;
    }
    if (ids == null) {
      waiting.put(manifest.segment(), manifest);
      return;
    }
    waiting.remove(manifest.segment());
    registry.install(manifest, ids);
    for (int i = 0; i < manifest.chunks(); i++) {
      store.delete(SegmentRecords.chunkKey(manifest.segment(), manifest.version(), i));
    }
  }

  private void reject(String key, Exception e) {
    rejected++;
    LOG.error("segments topic: record {} skipped: {}", key, e.getMessage());
  }

  /** How many records could not be used. */
  public long rejected() {
    return rejected;
  }
}
