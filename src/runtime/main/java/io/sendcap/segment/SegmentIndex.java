package io.sendcap.segment;

/**
 * The segment each user belongs to.
 *
 * <p>Implementations are safe to call from several stream threads at once.
 */
public interface SegmentIndex {
  /**
   * Returns the name of the first segment, in priority order, that contains the user, or {@code
   * null} if none does (the user then gets the default policy).
   */
  String segmentOf(long userId);
}
