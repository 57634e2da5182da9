package io.sendcap.topology;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.reference.ReferenceCaps;
import java.time.Instant;

/**
 * What an output record says of a send, or what the rules say it should: a delivery ({@code
 * delivered}), a suppression (its reason) or a dead letter, with the fields of a suppression.
 */
record Seen(
    String kind,
    String segment,
    Instant decidedAt,
    String capWindow,
    Long capWindowMs,
    Integer capLimit,
    Integer capCount,
    Instant nextEligibleAt,
    String globalCap) {
  static final Seen DEAD_LETTER =
      new Seen("dead letter", null, null, null, null, null, null, null, null);

  static Seen of(Delivery d) {
    return new Seen(
        d.getFailOpen() ? "delivered fail-open" : "delivered",
        d.getSegment(),
        d.getDecidedAt(),
        null,
        null,
        null,
        null,
        null,
        null);
  }

  static Seen of(Suppression s) {
    return new Seen(
        s.getReason() + (s.getShadow() ? " shadow" : ""),
        s.getSegment(),
        s.getDecidedAt(),
        s.getCapWindow(),
        s.getCapWindowMs(),
        s.getCapLimit(),
        s.getCapCount(),
        s.getNextEligibleAt(),
        s.getGlobalCap());
  }

  /** What the reference model's verdict looks like on the output topics. */
  static Seen of(ReferenceCaps.Verdict v, String segment, long now) {
    Instant at = Instant.ofEpochMilli(now);
    Instant next = Instant.ofEpochMilli(v.nextEligibleAt());
    return switch (v.outcome()) {
      case ALLOWED, REPLAY, TRANSACTIONAL ->
          new Seen("delivered", segment, at, null, null, null, null, null, null);
      case CAP ->
          new Seen(
              "CAP",
              segment,
              at,
              v.cap().name(),
              v.cap().window().toMillis(),
              v.cap().limit(),
              v.count(),
              next,
              null);
      case MIN_INTERVAL ->
          new Seen("MIN_INTERVAL", segment, at, null, null, null, null, next, null);
    };
  }

  boolean delivered() {
    return kind.startsWith("delivered");
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(kind);
    if (capWindow != null) {
      b.append(' ')
          .append(globalCap == null ? "" : globalCap + " ")
          .append(capWindow)
          .append(" limit ")
          .append(capLimit);
    }
    if (capCount != null) {
      b.append(" count ").append(capCount);
    }
    if (nextEligibleAt != null) {
      b.append(", next eligible ").append(nextEligibleAt);
    }
    return b.toString();
  }
}
