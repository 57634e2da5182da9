package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.util.Map;

/**
 * Counts the records sent to the dead-letter topic, {@code sendcap.sends.dead.letters} by reason:
 * {@code unreadable} (not a send sendcap can read), {@code invalid} (a send with invalid values),
 * {@code too-large} (a send larger than {@code cap.max-send-bytes}, or with a key too long), {@code
 * unwritable} (a decision the producer could not write, see {@link UnwritableOutputHandler};
 * counted at each attempt, so a send read again after its dead letter timed out counts twice) or
 * {@code redis-key} (a send whose user's key in Redis holds what sendcap did not write).
 *
 * <p>Kafka Streams creates the exception handlers itself and configures them with its properties;
 * the registry reaches them there, under {@link #CONFIG}.
 */
final class DeadLetterMeters {
  /** The Kafka Streams property that carries the {@link MeterRegistry} to the handlers. */
  static final String CONFIG = "sendcap.metrics.registry";

  private DeadLetterMeters() {}

  /** The counter of one reason, or a counter that counts nowhere if no registry was passed. */
  static Counter counter(Map<String, ?> configs, String reason) {
    Object registry = configs.get(CONFIG);
    if (!(registry instanceof MeterRegistry metrics)) {
      return Counter.builder("sendcap.sends.dead.letters").register(new CompositeMeterRegistry());
    }
    return counter(metrics, reason);
  }

  /** The counter of one reason in {@code metrics}. */
  static Counter counter(MeterRegistry metrics, String reason) {
    return Counter.builder("sendcap.sends.dead.letters")
        .description("Input records sent to the dead-letter topic")
        .tag("reason", reason)
        .register(metrics);
  }
}
