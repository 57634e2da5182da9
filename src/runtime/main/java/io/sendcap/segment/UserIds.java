package io.sendcap.segment;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.LongConsumer;
import org.roaringbitmap.RoaringBitmap;
import org.roaringbitmap.longlong.Roaring64Bitmap;

/**
 * A set of non-negative 64-bit user ids held as roaring bitmaps.
 *
 * <p>Ids below 2<sup>32</sup>, the common case, live in a 32-bit {@link RoaringBitmap} (treated as
 * unsigned); larger ids in a {@link Roaring64Bitmap}. Callers see one set of longs. Not safe for
 * concurrent mutation; a built set is read-only and then safe to share.
 *
 * <p>Serialized in the portable roaring format's 64-bit extension (the RoaringFormatSpec, as
 * written by CRoaring and by {@code Roaring64NavigableMap.serializePortable}): a little-endian
 * 64-bit count of buckets, then per bucket, in ascending order, the little-endian high 32 bits and
 * a 32-bit portable bitmap of the low 32 bits. A plain 32-bit portable bitmap is read too.
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

  /** The set in the portable format's 64-bit extension. */
  public byte[] toPortableBytes() {
    ByteArrayOutputStream bytes =
        new ByteArrayOutputStream((int) Math.min(Integer.MAX_VALUE - 8, 16 + sizeInBytes()));
    writePortable(bytes);
    return bytes.toByteArray();
  }

  /** Writes the set in the portable format's 64-bit extension. */
  public void writePortable(OutputStream out) {
    try {
      // The 64-bit part, serialized on its own, starts with its bucket count; the low bitmap is
      // bucket 0, which sorts before every bucket of the 64-bit part.
      ByteArrayOutputStream highBytes = new ByteArrayOutputStream();
      high.serializePortable(new DataOutputStream(highBytes));
      ByteBuffer highBuffer =
          ByteBuffer.wrap(highBytes.toByteArray()).order(ByteOrder.LITTLE_ENDIAN);
      long highBuckets = highBuffer.getLong(0);
      boolean hasLow = !low.isEmpty();
      DataOutputStream data = new DataOutputStream(out);
      data.writeLong(Long.reverseBytes(highBuckets + (hasLow ? 1 : 0)));
      if (hasLow) {
        data.writeInt(0);
        low.serialize(data);
      }
      data.write(highBuffer.array(), Long.BYTES, highBuffer.capacity() - Long.BYTES);
      data.flush();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Reads a set in the portable format: the 64-bit extension, or a plain 32-bit bitmap (told apart
   * by the 32-bit format's cookie in its first bytes).
   *
   * @throws IllegalArgumentException if the bytes are neither
   */
  public static UserIds readPortable(ByteBuffer bytes) {
    ByteBuffer in = bytes.slice().order(ByteOrder.LITTLE_ENDIAN);
    try {
      if (in.remaining() >= 4 && isPortable32(in.getInt(0))) {
        RoaringBitmap only = new RoaringBitmap();
        only.deserialize(in);
        requireEnd(in, (int) only.serializedSizeInBytes());
        return new UserIds(only, new Roaring64Bitmap());
      }
      long buckets = in.getLong(0);
      int at = Long.BYTES;
      RoaringBitmap low = new RoaringBitmap();
      ByteArrayOutputStream highBytes = new ByteArrayOutputStream();
      DataOutputStream highData = new DataOutputStream(highBytes);
      long highBuckets = 0;
      for (long b = 0; b < buckets; b++) {
        int key = in.getInt(at);
        at += Integer.BYTES;
        RoaringBitmap bucket = new RoaringBitmap();
        bucket.deserialize(in.position(at).slice().order(ByteOrder.LITTLE_ENDIAN));
        int size = (int) bucket.serializedSizeInBytes();
        if (key == 0) {
          low = bucket;
        } else {
          highData.writeInt(Integer.reverseBytes(key));
          highData.write(in.array(), in.arrayOffset() + at, size);
          highBuckets++;
        }
        at += size;
      }
      requireEnd(in, at);
      Roaring64Bitmap high = new Roaring64Bitmap();
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      DataOutputStream allData = new DataOutputStream(all);
      allData.writeLong(Long.reverseBytes(highBuckets));
      allData.write(highBytes.toByteArray());
      high.deserializePortable(
          new DataInputStream(new java.io.ByteArrayInputStream(all.toByteArray())));
      return new UserIds(low, high);
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException(
          "not a roaring bitmap in the portable format: " + e.getMessage(), e);
    }
  }

  private static boolean isPortable32(int cookie) {
    return cookie == 12346 || (cookie & 0xFFFF) == 12347;
  }

  private static void requireEnd(ByteBuffer in, int end) {
    if (end != in.limit()) {
      throw new IllegalArgumentException(
          (in.limit() - end) + " bytes follow the bitmap (" + end + " bytes)");
    }
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof UserIds other && low.equals(other.low) && high.equals(other.high);
  }

  @Override
  public int hashCode() {
    return low.hashCode() * 31 + high.hashCode();
  }
}
