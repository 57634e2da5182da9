package io.sendcap.segment;

import java.util.function.LongConsumer;
import org.roaringbitmap.RoaringBitmap;
import org.roaringbitmap.longlong.Roaring64Bitmap;

/**
 * A set of non-negative 64-bit user ids held as roaring bitmaps.
 *
 * <p>Ids below 2<sup>32</sup>, the common case, live in a 32-bit {@link RoaringBitmap} (treated as
 * unsigned); larger ids in a {@link Roaring64Bitmap}. Callers see one set of longs. Not safe for
 * concurrent mutation; a built set is read-only and then safe to share.
 */
public final class UserIds {
  private static final long LOW_LIMIT = 1L << 32;

  private final RoaringBitmap low;
  private final Roaring64Bitmap high;

  /** Creates an empty set. */
  public UserIds() {
    this(new RoaringBitmap(), new Roaring64Bitmap());
  }

  private UserIds(RoaringBitmap low, Roaring64Bitmap high) {
    this.low = low;
    this.high = high;
  }

  /** Adds a user id; negative ids are rejected. */
  public void add(long userId) {
    if (userId < 0) {
      throw new IllegalArgumentException("user id must not be negative: " + userId);
    }
    if (userId < LOW_LIMIT) {
      low.add((int) userId);
    } else {
      high.addLong(userId);
    }
  }

  /** Whether the set contains the user id. */
  public boolean contains(long userId) {
    if (userId < 0) {
      return false;
    }
    return userId < LOW_LIMIT ? low.contains((int) userId) : high.contains(userId);
  }

  /** The number of ids in the set. */
  public long cardinality() {
    return low.getLongCardinality() + high.getLongCardinality();
  }

  /** The ids in both this set and {@code other}. */
  public UserIds and(UserIds other) {
    Roaring64Bitmap highs = high.clone();
    highs.and(other.high);
    return new UserIds(RoaringBitmap.and(low, other.low), highs);
  }

  /** Calls {@code action} with each id, in ascending order. */
  public void forEach(LongConsumer action) {
    low.forEach((int id) -> action.accept(Integer.toUnsignedLong(id)));
    high.forEach(action::accept);
  }

  /** Compresses runs of consecutive ids; call once the set is complete. */
  public void optimize() {
    low.runOptimize();
    high.runOptimize();
  }

  /** The bytes the set takes when serialized, close to what it takes in memory. */
  public long sizeInBytes() {
    return low.serializedSizeInBytes() + high.serializedSizeInBytes();
  }
}
