package io.sendcap.topology;

import java.util.Arrays;

/**
 * Values by input offset, in offset order: a task's sends, held until they are decided.
 *
 * <p>A task reads its partition in offset order, so almost every {@link #put} appends; the
 * exceptions (a batch held again when the limiter could not be reached, sends restored from an
 * earlier version's buffer) are inserted into place. Two arrays take no boxed key or tree node per
 * send, where a {@code TreeMap} took both and showed in the stream thread's profile (though not,
 * through the pipeline bench's noise, in its CPU per send: BENCHMARKS.md).
 */
final class ByOffset<V> {
  /** What {@link #forEach} hands each value to, with its offset. */
  interface Visitor<V> {
    void visit(long offset, V value);
  }

  private long[] offsets;
  private Object[] values;
  private int size;

  ByOffset() {
    this(16);
  }

  ByOffset(int capacity) {
    offsets = new long[Math.max(1, capacity)];
    values = new Object[offsets.length];
  }

  int size() {
    return size;
  }

  boolean isEmpty() {
    return size == 0;
  }

  /** The {@code i}-th offset, in ascending order. */
  long offset(int i) {
    return offsets[checked(i)];
  }

  /** The value of the {@code i}-th offset. */
  @SuppressWarnings("unchecked")
  V value(int i) {
    return (V) values[checked(i)];
  }

  /** Holds {@code value} at {@code offset}, replacing the value held there if any. */
  void put(long offset, V value) {
    if (size == 0 || offset > offsets[size - 1]) {
      grow(size + 1);
      offsets[size] = offset;
      values[size] = value;
      size++;
      return;
    }
    int i = Arrays.binarySearch(offsets, 0, size, offset);
    if (i >= 0) {
      values[i] = value;
      return;
    }
    i = -i - 1;
    grow(size + 1);
    System.arraycopy(offsets, i, offsets, i + 1, size - i);
    System.arraycopy(values, i, values, i + 1, size - i);
    offsets[i] = offset;
    values[i] = value;
    size++;
  }

  boolean containsKey(long offset) {
    return Arrays.binarySearch(offsets, 0, size, offset) >= 0;
  }

  /** The value held at {@code offset}; null if there is none. */
  @SuppressWarnings("unchecked")
  V get(long offset) {
    int i = Arrays.binarySearch(offsets, 0, size, offset);
    return i < 0 ? null : (V) values[i];
  }

  /** The index of the lowest offset above {@code offset}; {@link #size()} if there is none. */
  int indexAbove(long offset) {
    if (size == 0 || offset < offsets[0]) {
      return 0; // as for every send after the ones restored from an earlier buffer, if any
    }
    int i = Arrays.binarySearch(offsets, 0, size, offset);
    return i >= 0 ? i + 1 : -i - 1;
  }

  /** Hands each value to {@code visitor} with its offset, in offset order. */
  void forEach(Visitor<? super V> visitor) {
    for (int i = 0; i < size; i++) {
      visitor.visit(offsets[i], value(i));
    }
  }

  private int checked(int i) {
    if (i < 0 || i >= size) {
      throw new IndexOutOfBoundsException("index " + i + " of " + size);
    }
    return i;
  }

  private void grow(int capacity) {
    if (capacity > offsets.length) {
      int length = Math.max(capacity, offsets.length * 2);
      offsets = Arrays.copyOf(offsets, length);
      values = Arrays.copyOf(values, length);
    }
  }
}
