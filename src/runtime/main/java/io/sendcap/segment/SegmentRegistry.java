package io.sendcap.segment;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The segments an instance holds, each at its newest complete version, looked up in the policy
 * file's priority order.
 *
 * <p>Versions are installed by the loader that reads the {@code segments} topic; a lookup sees
 * either the old or the new version of a segment, never a mix, because every install replaces one
 * immutable snapshot with another. An install of a version not newer than the one held is ignored.
 * The priority order changes the same way when new policies are published.
 */
public final class SegmentRegistry implements SegmentIndex {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentRegistry.class);

  /** A segment version in use: its manifest and its users. */
  public record Loaded(SegmentRecords.Manifest manifest, UserIds ids) {}

  /** What lookups check: the segments in priority order and the users of each (null: none yet). */
  private record Snapshot(List<String> priority, UserIds[] sets) {}

  private final Map<String, Loaded> loaded = new ConcurrentHashMap<>();
  private volatile Snapshot snapshot;

  /** A registry whose lookups check {@code priorityOrder}'s segments, first one first. */
  public SegmentRegistry(List<String> priorityOrder) {
    this.snapshot = snapshot(List.copyOf(priorityOrder));
  }

  @Override
  public String segmentOf(long userId) {
    Snapshot s = snapshot;
    UserIds[] sets = s.sets();
    for (int i = 0; i < sets.length; i++) {
      if (sets[i] != null && sets[i].contains(userId)) {
        return s.priority().get(i);
      }
    }
    return null;
  }

  /** Checks {@code priorityOrder}'s segments from now on, first one first. */
  public synchronized void prioritize(List<String> priorityOrder) {
    snapshot = snapshot(List.copyOf(priorityOrder));
    notifyAll();
  }

  private Snapshot snapshot(List<String> priority) {
    UserIds[] sets = new UserIds[priority.size()];
    for (int i = 0; i < sets.length; i++) {
      Loaded l = loaded.get(priority.get(i));
      sets[i] = l == null ? null : l.ids();
    }
    return new Snapshot(priority, sets);
  }

  /**
   * Uses {@code ids} as version {@code manifest.version()} of its segment, unless a version at
   * least as new is held; returns whether it was installed.
   */
  public synchronized boolean install(SegmentRecords.Manifest manifest, UserIds ids) {
    Loaded current = loaded.get(manifest.segment());
    if (current != null && current.manifest().version() >= manifest.version()) {
      return false;
    }
    loaded.put(manifest.segment(), new Loaded(manifest, ids));
    snapshot = snapshot(snapshot.priority());
    LOG.info(
        "segment {} v{} in use: {} users, {} bytes{}",
        manifest.segment(),
        manifest.version(),
        manifest.cardinality(),
        manifest.bytes(),
        current == null ? "" : " (was v" + current.manifest().version() + ")");
    notifyAll();
    return true;
  }

  /** The version held of {@code segment}, or 0 if none. */
  public long version(String segment) {
    Loaded l = loaded.get(segment);
    return l == null ? 0 : l.manifest().version();
  }

  /** Every segment held, by name, including those no policy names. */
  public Map<String, Loaded> loaded() {
    return new TreeMap<>(loaded);
  }

  /** The segments of the priority order, in that order. */
  public List<String> priorityOrder() {
    return snapshot.priority();
  }

  /** Which of {@code names} no version is held of. */
  public List<String> missing(Collection<String> names) {
    return names.stream().filter(n -> !loaded.containsKey(n)).toList();
  }

  /**
   * Waits until a version of every segment of the priority order is held, at most {@code timeout};
   * returns the segments still missing.
   */
  public synchronized List<String> awaitAll(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    List<String> missing = missing(priorityOrder());
    while (!missing.isEmpty()) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        break;
      }
      wait(Math.max(1, left / 1_000_000));
      missing = missing(priorityOrder());
    }
    return new ArrayList<>(missing);
  }
}
