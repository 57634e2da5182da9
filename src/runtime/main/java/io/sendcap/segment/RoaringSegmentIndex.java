package io.sendcap.segment;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A {@link SegmentIndex} over roaring bitmaps, checked in priority order.
 *
 * <p>A user in several segments belongs to the first of them in priority order (the policy file's
 * order); {@link #overlaps()} reports such users so that they can be fixed at the source.
 */
public final class RoaringSegmentIndex implements SegmentIndex {
  private final List<String> names;
  private final List<UserIds> sets;

  /** Creates an index of the given segments; the map's iteration order is the priority order. */
  public RoaringSegmentIndex(Map<String, UserIds> segmentsInPriorityOrder) {
    this.names = List.copyOf(segmentsInPriorityOrder.keySet());
    this.sets = List.copyOf(segmentsInPriorityOrder.values());
  }

  @Override
  public String segmentOf(long userId) {
    for (int i = 0; i < sets.size(); i++) {
      if (sets.get(i).contains(userId)) {
        return names.get(i);
      }
    }
    return null;
  }

  /** The segments in priority order, with their ids. */
  public Map<String, UserIds> segments() {
    Map<String, UserIds> segments = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); i++) {
      segments.put(names.get(i), sets.get(i));
    }
    return segments;
  }

  /** The pairs of segments that share users, with how many they share. */
  public List<Overlap> overlaps() {
    List<Overlap> overlaps = new ArrayList<>();
    for (int i = 0; i < sets.size(); i++) {
      for (int j = i + 1; j < sets.size(); j++) {
        long shared = sets.get(i).and(sets.get(j)).cardinality();
        if (shared > 0) {
          overlaps.add(new Overlap(names.get(i), names.get(j), shared));
        }
      }
    }
    return overlaps;
  }

  /** Two segments that share {@code users} users; {@code winner} is the one that decides. */
  public record Overlap(String winner, String other, long users) {}
}
