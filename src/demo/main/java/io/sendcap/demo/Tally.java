package io.sendcap.demo;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.cli.ToolSerdes;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.ConfluentAvroSerde;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Counts of the sends decided on sendcap's output topics: allowed by segment, suppressed by segment
 * and reason, and dead letters.
 */
final class Tally {
  final Map<String, Long> allowed = new TreeMap<>();
  final Map<String, Long> suppressed = new TreeMap<>();
  private final SendcapConfig.Topics topics;
  private final Deserializer<Delivery> deliveries;
  private final Deserializer<Suppression> suppressions;
  private long deadLetters;
  private long confluentFramed;

  /** Creates an empty tally of records read from the configuration's topics, in either framing. */
  Tally(SendcapConfig config) {
    this.topics = config.topics();
    this.deliveries = ToolSerdes.reader(config, Delivery.class);
    this.suppressions = ToolSerdes.reader(config, Suppression.class);
  }

  /** The topics a tally counts the records of: deliveries, suppressed and dead letters. */
  static List<String> topics(SendcapConfig.Topics topics) {
    return List.of(topics.deliveries(), topics.suppressed(), topics.deadLetters());
  }

  /** Counts one record of the deliveries, suppressed or dead-letter topic. */
  void add(ConsumerRecord<byte[], byte[]> record) {
    if (!record.topic().equals(topics.deadLetters())
        && ConfluentAvroSerde.isFramed(record.value())) {
      confluentFramed++;
    }
    if (record.topic().equals(topics.deliveries())) {
      allowed.merge(
          deliveries.deserialize(record.topic(), record.value()).getSegment(), 1L, Long::sum);
    } else if (record.topic().equals(topics.suppressed())) {
      Suppression s = suppressions.deserialize(record.topic(), record.value());
      suppressed.merge(s.getSegment() + " / " + s.getReason(), 1L, Long::sum);
    } else if (record.topic().equals(topics.deadLetters())) {
      deadLetters++;
    } else {
      throw new IllegalArgumentException("not an output topic of sendcap: " + record.topic());
    }
  }

  /** The sends allowed. */
  long allowedTotal() {
    return allowed.values().stream().mapToLong(Long::longValue).sum();
  }

  /** The sends suppressed. */
  long suppressedTotal() {
    return suppressed.values().stream().mapToLong(Long::longValue).sum();
  }

  /** The records on the dead-letter topic. */
  long deadLetters() {
    return deadLetters;
  }

  /** The deliveries and suppressions counted that are in the Confluent wire format. */
  long confluentFramed() {
    return confluentFramed;
  }

  /** Every record counted. */
  long total() {
    return allowedTotal() + suppressedTotal() + deadLetters;
  }
}
