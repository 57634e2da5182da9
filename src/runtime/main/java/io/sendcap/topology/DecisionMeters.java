package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.avro.specific.SpecificRecord;

/**
 * The meters of one cap processor: {@code sendcap.sends.allowed} by segment, channel and whether
 * the limiter was bypassed; {@code sendcap.sends.suppressed} by segment, channel, reason and
 * whether it was a shadow suppression ({@code cap.mode=shadow}: the send was delivered too); {@code
 * sendcap.batch.size}, the sends of each flushed batch; and {@code sendcap.batch.wait}, the time
 * the stream thread spent blocked on a batch whose decisions had not arrived when it needed them:
 * its rate over time is the share of a thread's time spent waiting for the limiter.
 *
 * <p>Counters are looked up once per segment, channel and outcome and kept, so that counting a send
 * costs an array read and an increment.
 */
final class DecisionMeters {
  private static final Channel[] CHANNELS = Channel.values();
  private static final SuppressionReason[] REASONS = SuppressionReason.values();

  /**
   * Per channel: allowed, allowed unchecked (fail-open), then one per suppression reason, then one
   * per shadow suppression reason.
   */
  private static final int OUTCOMES = 2 + 2 * REASONS.length;

  private final MeterRegistry registry;
  private final DistributionSummary batchSize;
  private final Timer batchWait;
  private final Map<String, Counter[]> bySegment = new HashMap<>();

  DecisionMeters(MeterRegistry registry) {
    this.registry = registry;
    this.batchSize =
        DistributionSummary.builder("sendcap.batch.size")
            .description("Sends in each micro-batch flushed to the limiter")
            .baseUnit("sends")
            .publishPercentileHistogram()
            .register(registry);
    this.batchWait =
        Timer.builder("sendcap.batch.wait")
            .description(
                "Time a stream thread was blocked on a batch whose decisions had not arrived")
            .register(registry);
  }

  /** Records the size of a flushed batch. */
  void batch(int sends) {
    batchSize.record(sends);
  }

  /** Records the time the thread was blocked on a batch's decisions. */
  void waited(long nanos) {
    batchWait.record(nanos, TimeUnit.NANOSECONDS);
  }

  /** Counts one output record: a {@link Delivery} or a {@link Suppression}. */
  void count(String segment, Channel channel, SpecificRecord out) {
    Counter[] counters =
        bySegment.computeIfAbsent(segment, s -> new Counter[CHANNELS.length * OUTCOMES]);
    int outcome;
    if (out instanceof Suppression s) {
      outcome = 2 + (s.getShadow() ? REASONS.length : 0) + s.getReason().ordinal();
    } else {
      outcome = ((Delivery) out).getFailOpen() ? 1 : 0;
    }
    int at = channel.ordinal() * OUTCOMES + outcome;
    Counter counter = counters[at];
    if (counter == null) {
      counter = counter(segment, channel, outcome);
      counters[at] = counter;
    }
    counter.increment();
  }

  private Counter counter(String segment, Channel channel, int outcome) {
    if (outcome < 2) {
      return Counter.builder("sendcap.sends.allowed")
          .description("Sends delivered")
          .tag("segment", segment)
          .tag("channel", channel.name())
          .tag("fail_open", Boolean.toString(outcome == 1))
          .register(registry);
    }
    int suppression = outcome - 2;
    return Counter.builder("sendcap.sends.suppressed")
        .description("Sends suppressed (shadow: delivered all the same under cap.mode=shadow)")
        .tag("segment", segment)
        .tag("channel", channel.name())
        .tag("reason", REASONS[suppression % REASONS.length].name())
        .tag("shadow", Boolean.toString(suppression >= REASONS.length))
        .register(registry);
  }
}
