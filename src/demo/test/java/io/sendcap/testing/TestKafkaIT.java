package io.sendcap.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class TestKafkaIT {
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

  @Test
  void transactionalRecordsAreReadCommitted() throws Exception {
    try (TestKafka kafka = TestKafka.start()) {
      kafka.createTopics(2, "sends", "outcomes");

      Map<String, Object> producerConfig =
          Map.of(
              ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
              kafka.bootstrapServers(),
              ProducerConfig.TRANSACTIONAL_ID_CONFIG,
              "test-kafka-it",
              ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
              StringSerializer.class,
              ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
              StringSerializer.class);
      try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>("sends", 1, "user-1", "send-1")).get();
        producer.send(new ProducerRecord<>("outcomes", 1, "user-1", "allowed")).get();
        producer.commitTransaction();
      }

      assertThat(readCommitted(kafka, new TopicPartition("outcomes", 1)))
          .containsExactly("user-1=allowed");
    }
  }

  private static List<String> readCommitted(TestKafka kafka, TopicPartition partition) {
    Map<String, Object> config =
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ConsumerConfig.ISOLATION_LEVEL_CONFIG,
            "read_committed",
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
            StringDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            StringDeserializer.class);
    List<String> records = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      Instant deadline = Instant.now().plus(READ_TIMEOUT);
      while (records.isEmpty() && Instant.now().isBefore(deadline)) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
          records.add(record.key() + "=" + record.value());
        }
      }
    }
    return records;
  }
}
