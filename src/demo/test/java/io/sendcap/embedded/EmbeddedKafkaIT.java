package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
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
import org.junit.jupiter.api.io.TempDir;

class EmbeddedKafkaIT {
  private static final String TOPIC = "embedded-kafka-it";
  private static final TopicPartition PARTITION = new TopicPartition(TOPIC, 0);
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

  @Test
  void committedRecordSurvivesBrokerRestart() throws Exception {
    try (EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      String bootstrapServers = kafka.bootstrapServers();
      createTopic(bootstrapServers);
      produceInTransaction(bootstrapServers, "user-1", "hello");
      assertThat(readCommitted(bootstrapServers, 1)).containsExactly("user-1=hello");

      kafka.restart();

      assertThat(kafka.bootstrapServers()).isEqualTo(bootstrapServers);
      assertThat(readCommitted(bootstrapServers, 1)).containsExactly("user-1=hello");
    }
  }

  @Test
  void closeDeletesTheTemporaryDataDir() {
    Path dataDir;
    try (EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      dataDir = kafka.dataDir();
      assertThat(dataDir.resolve("meta.properties")).exists();
    }
    assertThat(dataDir).doesNotExist();
  }

  @Test
  void givenDataDirIsKeptAndReused(@TempDir Path dataDir) throws Exception {
    try (EmbeddedKafka kafka = EmbeddedKafka.start(dataDir)) {
      createTopic(kafka.bootstrapServers());
      produceInTransaction(kafka.bootstrapServers(), "user-2", "kept");
    }
    assertThat(Files.list(dataDir)).isNotEmpty();

    try (EmbeddedKafka kafka = EmbeddedKafka.start(dataDir)) {
      assertThat(readCommitted(kafka.bootstrapServers(), 1)).containsExactly("user-2=kept");
    }
  }

  private static void createTopic(String bootstrapServers) throws Exception {
    Map<String, Object> config =
        Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    try (Admin admin = Admin.create(config)) {
      admin.createTopics(Set.of(new NewTopic(TOPIC, 1, (short) 1))).all().get();
    }
  }

  private static void produceInTransaction(String bootstrapServers, String key, String value)
      throws Exception {
    Map<String, Object> config =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrapServers,
            ProducerConfig.TRANSACTIONAL_ID_CONFIG,
            "embedded-kafka-it",
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
            StringSerializer.class,
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
            StringSerializer.class);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(new ProducerRecord<>(TOPIC, key, value)).get();
      producer.commitTransaction();
    }
  }

  private static List<String> readCommitted(String bootstrapServers, int expected) {
    Map<String, Object> config =
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrapServers,
            ConsumerConfig.ISOLATION_LEVEL_CONFIG,
            "read_committed",
            ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
            StringDeserializer.class,
            ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
            StringDeserializer.class);
    List<String> records = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
      consumer.assign(List.of(PARTITION));
      consumer.seekToBeginning(List.of(PARTITION));
      Instant deadline = Instant.now().plus(READ_TIMEOUT);
      while (records.size() < expected && Instant.now().isBefore(deadline)) {
        for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
          records.add(record.key() + "=" + record.value());
        }
      }
    }
    return records;
  }
}
