package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.Decoded;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads a task's input again with a consumer of its own, configured as Kafka Streams configures its
 * restore consumers (the same security settings and isolation level as the stream threads), in the
 * application's consumer group only to ask for the committed offset: it is assigned its partition
 * and never joins the group. A consumer is opened for each read, which happens only when a task is
 * restored with undecided sends.
 */
final class KafkaInputReplay implements InputReplay {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaInputReplay.class);

  private final SendcapConfig config;
  private final Deserializer<Decoded<ScheduledSend>> values;

  /**
   * @param values the topology's deserializer of the input's values
   */
  KafkaInputReplay(SendcapConfig config, Deserializer<Decoded<ScheduledSend>> values) {
    this.config = config;
    this.values = values;
  }

  @Override
  public void read(TopicPartition partition, long from, Consumer<Replayed> each) {
    String group = config.streams().getProperty(StreamsConfig.APPLICATION_ID_CONFIG);
    Map<String, Object> props =
        new StreamsConfig(config.streams())
            .getRestoreConsumerConfigs(group + "-replay-" + partition);
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    Duration timeout = config.brokerTimeout();
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      consumer.assign(List.of(partition));
      OffsetAndMetadata committed = consumer.committed(Set.of(partition), timeout).get(partition);
      if (committed == null || committed.offset() <= from) {
        return;
      }
      long end = committed.offset();
      long start =
          Math.max(from, consumer.beginningOffsets(List.of(partition), timeout).get(partition));
      if (start > from) {
        LOG.error(
            "{}: the sends at offsets {} to {} were deleted by the topic's retention before they"
                + " were decided; they are lost. Raise the topic's retention.ms well above the"
                + " time an instance can stay down",
            partition,
            from,
            start - 1);
      }
      consumer.seek(partition, start);
      long position = start;
      long progressBy = System.nanoTime() + timeout.toNanos();
      while (position < end) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
          if (r.offset() < end) {
            hand(r, each);
          }
        }
        long now = consumer.position(partition, timeout);
        if (now > position) {
          position = now;
          progressBy = System.nanoTime() + timeout.toNanos();
        } else if (System.nanoTime() > progressBy) {
          throw new StreamsException(
              String.format(
                  "could not read %s from offset %d to %d (stuck at %d) within broker.timeout.ms=%d"
                      + " to decide the sends its task had not decided; the task is tried again",
                  partition, from, end, position, timeout.toMillis()));
        }
      }
    }
  }

  private void hand(ConsumerRecord<byte[], byte[]> r, Consumer<Replayed> each) {
    if (r.timestamp() < 0) {
      return; // Kafka Streams drops it
    }
    Decoded<ScheduledSend> value;
    try {
      value = values.deserialize(r.topic(), r.headers(), r.value());
    } catch (RuntimeException e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        if (t instanceof SchemaRegistryUnavailableException) {
          throw e; // no bad record: as for the stream thread, the task stops and is tried again
        }
      }
      return; // it went to the dead-letter topic when it was first read
    }
    each.accept(new Replayed(r.offset(), r.key(), value, r.timestamp(), r.headers()));
  }
}
