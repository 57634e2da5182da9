package io.sendcap.serde;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * A map of at most {@code capacity} entries that drops the least recently used one when full.
 * Thread-safe; a value is computed outside the lock, so a slow computation (a registry call) does
 * not hold up readers of other keys, and two threads that miss the same key at once may both
 * compute it.
 */
final class LruCache<K, V> {
  private final Map<K, V> entries;

  LruCache(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity " + capacity + " is below 1");
    }
    this.entries =
        new LinkedHashMap<>(16, 0.75f, true) {
          @Override
          protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
            return size() > capacity;
          }
        };
  }

  /** The value of {@code key}, or null when it is not cached. */
  synchronized V get(K key) {
    return entries.get(key);
  }

  /** Caches a value. */
  synchronized void put(K key, V value) {
    entries.put(key, value);
  }

  /** The cached value of {@code key}, computed and cached if absent; {@code compute} may throw. */
  V computeIfAbsent(K key, Function<? super K, ? extends V> compute) {
    V value = get(key);
    if (value == null) {
      value = compute.apply(key);
      put(key, value);
    }
    return value;
  }

  /** How many entries are cached. */
  synchronized int size() {
    return entries.size();
  }
}
