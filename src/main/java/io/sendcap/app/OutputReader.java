package io.sendcap.app;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads sendcap's three output topics from the beginning, committed records only, into a tally. */
final class OutputReader implements AutoCloseable {
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final SendcapConfig.Topics topics;
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);

  OutputReader(String bootstrapServers, SendcapConfig.Topics topics) {
    this.topics = topics;
    this.consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed",
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                5000),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : List.of(topics.deliveries(), topics.suppressed(), topics.deadLetters())) {
      consumer
          .partitionsFor(topic)
          .forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
    }
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
  }

  /** Reads what arrived within {@code wait} into the tally. */
  void poll(Tally tally, Duration wait) {
    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(wait)) {
      if (r.topic().equals(topics.deliveries())) {
        tally.add(deliveries.decode(r.value()));
      } else if (r.topic().equals(topics.suppressed())) {
        tally.add(suppressions.decode(r.value()));
      } else {
        tally.deadLetters++;
      }
    }
  }

  @Override
  public void close() {
    consumer.close();
  }
}
