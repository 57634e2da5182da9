package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.Decoded;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.CapturedLogs;
import io.sendcap.testing.TestKafka;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A restored task reads its input again from its mark up to its committed offset, on a real broker:
 * exactly the records Kafka Streams handed the topology in that stretch, under the same isolation
 * level.
 */
class KafkaInputReplayIT {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");
  private static final SingleObjectAvroSerde<ScheduledSend> SENDS =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private static final Deserializer<Decoded<ScheduledSend>> VALUES =
      (topic, bytes) -> SENDS.decodeKeepingBody(bytes);

  private static TestKafka kafka;

  @BeforeAll
  static void start() {
    kafka = TestKafka.start();
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  private static SendcapConfig config(String app, String guarantee) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", kafka.bootstrapServers());
    p.setProperty("application.id", app);
    p.setProperty("processing.guarantee", guarantee);
    return SendcapConfig.from(p, "test");
  }

  private static byte[] send(int i) {
    return SENDS.encode(
        ScheduledSend.newBuilder()
            .setMessageId("m" + i)
            .setCampaignId("c1")
            .setUserId(i)
            .setChannel(Channel.EMAIL)
            .setScheduledAt(T0.plusSeconds(i))
            .build());
  }

  private static ProducerRecord<byte[], byte[]> record(String topic, int i, byte[] value) {
    return new ProducerRecord<>(
        topic, 0, T0.plusSeconds(i).toEpochMilli(), new byte[] {(byte) i}, value);
  }

  private static Map<String, Object> producerConfig() {
    return Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers(),
        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
  }

  /** Commits {@code offset} on partition 0 of {@code topic} for the application's group. */
  private static void commit(String app, String topic, long offset) {
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG,
                app),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer())) {
      consumer.commitSync(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(offset)));
    }
  }

  /** The message ids, or "offset N" for a record without a send, handed by a replay. */
  private static List<String> replay(SendcapConfig config, String topic, long from) {
    List<String> handed = new ArrayList<>();
    new KafkaInputReplay(config, VALUES)
        .read(
            new TopicPartition(topic, 0),
            from,
            r -> {
              assertThat(r.timestamp()).isEqualTo(T0.plusSeconds(r.offset()).toEpochMilli());
              assertThat(r.key()).containsExactly((byte) r.offset());
              handed.add(
                  r.value() == null ? "offset " + r.offset() : r.value().record().getMessageId());
            });
    return handed;
  }

  @Test
  void readsFromTheMarkUpToTheCommittedOffsetWithoutTheRecordsThatCouldNotBeRead() {
    String topic = "replay-plain";
    kafka.createTopics(1, topic);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig())) {
      for (int i = 0; i < 10; i++) {
        byte[] value =
            switch (i) {
              case 5 -> "not avro".getBytes(StandardCharsets.UTF_8); // a dead letter
              case 6 -> null; // a tombstone reaches the topology, which refuses it
              default -> send(i);
            };
        producer.send(record(topic, i, value));
      }
    }
    SendcapConfig config = config("replay-plain-app", "exactly_once_v2");
    assertThat(replay(config, topic, 3)).as("no offset committed yet").isEmpty();

    commit("replay-plain-app", topic, 8);

    assertThat(replay(config, topic, 3)).containsExactly("m3", "m4", "offset 6", "m7");
    assertThat(replay(config, topic, 8)).as("nothing undecided before the commit").isEmpty();
  }

  @Test
  void underExactlyOnceAbortedRecordsAreNotReadAgainAndUnderAtLeastOnceTheyAre() {
    String topic = "replay-transactions";
    kafka.createTopics(1, topic);
    Map<String, Object> transactional = new java.util.HashMap<>(producerConfig());
    transactional.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "replay-engine");
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(transactional)) {
      producer.initTransactions();
      producer.beginTransaction();
      producer.send(record(topic, 0, send(0)));
      producer.send(record(topic, 1, send(1)));
      producer.commitTransaction(); // offsets 0, 1, then a marker at 2
      producer.beginTransaction();
      producer.send(record(topic, 3, send(3)));
      producer.flush(); // written, so that the abort has something to abort
      producer.abortTransaction(); // offset 3, then a marker at 4
      producer.beginTransaction();
      producer.send(record(topic, 5, send(5)));
      producer.commitTransaction(); // offset 5, then a marker at 6
    }
    commit("replay-tx-app", topic, 7);

    assertThat(replay(config("replay-tx-app", "exactly_once_v2"), topic, 0))
        .containsExactly("m0", "m1", "m5");
    assertThat(replay(config("replay-tx-app", "at_least_once"), topic, 0))
        .containsExactly("m0", "m1", "m3", "m5");
  }

  @Test
  void sendsTheTopicsRetentionDeletedBeforeTheyWereDecidedAreReportedLost() throws Exception {
    String topic = "replay-retention";
    kafka.createTopics(1, topic);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig())) {
      for (int i = 0; i < 6; i++) {
        producer.send(record(topic, i, send(i)));
      }
    }
    commit("replay-retention-app", topic, 5);
    try (Admin admin =
        Admin.create(
            Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
      admin
          .deleteRecords(Map.of(new TopicPartition(topic, 0), RecordsToDelete.beforeOffset(3)))
          .all()
          .get();
    } catch (ExecutionException e) {
      throw new AssertionError(e);
    }

    try (CapturedLogs logs = new CapturedLogs()) {
      assertThat(replay(config("replay-retention-app", "exactly_once_v2"), topic, 1))
          .containsExactly("m3", "m4");
      assertThat(logs.lines())
          .anyMatch(
              l ->
                  l.contains(
                      "replay-retention-0: the sends at offsets 1 to 2 were deleted by the topic's"
                          + " retention before they were decided; they are lost"));
    }
  }
}
