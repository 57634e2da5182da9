package io.sendcap.app;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import java.util.Map;
import java.util.TreeMap;

/** Counts of decided sends: allowed by segment, suppressed by segment and reason, dead letters. */
final class Tally {
  final Map<String, Long> allowed = new TreeMap<>();
  final Map<String, Long> suppressed = new TreeMap<>();
  long deadLetters;

  void add(Delivery d) {
    allowed.merge(d.getSegment(), 1L, Long::sum);
  }

  void add(Suppression s) {
    suppressed.merge(s.getSegment() + " / " + s.getReason(), 1L, Long::sum);
  }

  long allowedTotal() {
    return allowed.values().stream().mapToLong(Long::longValue).sum();
  }

  long suppressedTotal() {
    return suppressed.values().stream().mapToLong(Long::longValue).sum();
  }

  long total() {
    return allowedTotal() + suppressedTotal() + deadLetters;
  }
}
