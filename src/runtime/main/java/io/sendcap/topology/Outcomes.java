package io.sendcap.topology;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.config.Cap;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.Policy;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import java.time.Instant;
import org.apache.avro.specific.SpecificRecord;

/**
 * Turns decisions into the records of the output topics.
 *
 * <p>The records of every send are built with their generated all-args constructors, whose
 * arguments are the schema's fields in order: a builder validates each field it is given and copies
 * the default of each one it is not, which showed in the stream thread's profile (BENCHMARKS.md).
 * The rarer records (global caps, an unreachable limiter) keep the builders' named setters.
 */
final class Outcomes {
  private Outcomes() {}

  /** The record for a send the limiter decided. */
  static SpecificRecord of(ScheduledSend send, Policy policy, Decision decision, long decidedAt) {
    if (decision.allowed()) {
      return delivery(send, policy.segment(), decidedAt, false);
    }
    Instant decided = Instant.ofEpochMilli(decidedAt);
    Instant nextEligible = Instant.ofEpochMilli(decision.nextEligibleAt());
    if (decision.outcome() == Decision.Outcome.CAPPED) {
      Cap cap = policy.caps().get(decision.capIndex());
      return new Suppression(
          send,
          policy.segment(),
          SuppressionReason.CAP,
          /* capWindow */ cap.name(),
          /* capWindowMs */ cap.window().toMillis(),
          /* capLimit */ cap.limit(),
          /* capCount */ decision.count(),
          decided,
          nextEligible,
          /* globalCap */ null,
          /* shadow */ false);
    }
    return new Suppression(
        send,
        policy.segment(),
        SuppressionReason.MIN_INTERVAL,
        /* capWindow */ null,
        /* capWindowMs */ null,
        /* capLimit */ null,
        /* capCount */ null,
        decided,
        nextEligible,
        /* globalCap */ null,
        /* shadow */ false);
  }

  /** The record for a send delivered without a decision of the limiter. */
  static Delivery delivery(ScheduledSend send, String segment, long decidedAt, boolean failOpen) {
    return new Delivery(send, segment, Instant.ofEpochMilli(decidedAt), failOpen);
  }

  /**
   * The record for a send refused by a global cap: the window of {@code key} was full; the same
   * send is next eligible when it ends.
   */
  static Suppression global(
      ScheduledSend send, String segment, long decidedAt, GlobalCap cap, GlobalQuotas.Key key) {
    return Suppression.newBuilder()
        .setSend(send)
        .setSegment(segment)
        .setReason(SuppressionReason.GLOBAL_CAP)
        .setGlobalCap(cap.per() == GlobalCap.Per.ALL ? cap.name() : cap.name() + ":" + key.scope())
        .setCapWindow(cap.windowName())
        .setCapWindowMs(cap.window().toMillis())
        .setCapLimit((int) cap.limit())
        .setDecidedAt(Instant.ofEpochMilli(decidedAt))
        .setNextEligibleAt(Instant.ofEpochMilli(Math.max(decidedAt, key.windowEnd())))
        .build();
  }

  /** The record for a send suppressed because the limiter could not be asked. */
  static Suppression unavailable(ScheduledSend send, String segment, long decidedAt) {
    return Suppression.newBuilder()
        .setSend(send)
        .setSegment(segment)
        .setReason(SuppressionReason.LIMITER_UNAVAILABLE)
        .setDecidedAt(Instant.ofEpochMilli(decidedAt))
        .build();
  }
}
