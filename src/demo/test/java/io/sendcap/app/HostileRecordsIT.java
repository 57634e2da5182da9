package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.PolicyRecords;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile records on a real broker and Redis, each in the middle of ordinary sends: every ordinary
 * send is decided once, every bad record is skipped or dead-lettered and counted with its reason,
 * and no stream or global thread fails, also after a restart that restores the global stores.
 */
class HostileRecordsIT {
  private static final Instant T0 =
      Instant.now().truncatedTo(ChronoUnit.DAYS).plus(Duration.ofHours(8));
  private static final String SHA = "0".repeat(64);

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);

  @BeforeAll
  static void start() throws Exception {
    kafka = TestKafka.start();
    kafka.createTopics(1, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  /**
   * Records of the segments and policies topics that no version can be made of, published before
   * the application starts (so the global stores meet them while restoring) and while it runs.
   */
  private static void produceBadGlobalRecords(String policiesTopic) {
    Map<String, Object> conf =
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(conf, new StringSerializer(), new ByteArraySerializer())) {
      for (String[] kv :
          new String[][] {
            {"evil", "{\"version\":1}"},
            {"vip", "not json"},
            {
              "vip",
              "{\"segment\":\"vip\",\"version\":99,\"chunks\":1,\"bytes\":-5,\"sha256\":\""
                  + SHA
                  + "\",\"cardinality\":1,\"publishedAt\":0}"
            },
            {
              "vip",
              "{\"segment\":\"vip\",\"version\":99,\"chunks\":1,\"bytes\":2147483000,\"sha256\":\""
                  + SHA
                  + "\",\"cardinality\":1,\"publishedAt\":0}"
            },
            {"vip/x/0", "chunk"},
          }) {
        producer.send(
            new ProducerRecord<>("segments", kv[0], kv[1].getBytes(StandardCharsets.UTF_8)));
      }
      RecordHeaders nullSource = new RecordHeaders();
      nullSource.add(PolicyRecords.SOURCE_HEADER, null);
      producer.send(
          new ProducerRecord<>(
              policiesTopic,
              null,
              PolicyRecords.KEY,
              "default: {caps: [[]]}".getBytes(StandardCharsets.UTF_8),
              nullSource));
      producer.send(
          new ProducerRecord<>(
              policiesTopic,
              null,
              PolicyRecords.KEY,
              "[]".getBytes(StandardCharsets.UTF_8),
              nullSource));
      producer.flush();
    }
  }

  /** {@code count} sends, one to each user from {@code firstUser} on. */
  private List<ProducerRecord<byte[], byte[]>> ordinarySends(
      String prefix, long firstUser, int count) {
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ScheduledSend send =
          ScheduledSend.newBuilder()
              .setMessageId(prefix + i)
              .setCampaignId("c1")
              .setUserId(firstUser + i)
              .setChannel(Channel.EMAIL)
              .setScheduledAt(T0.plusSeconds(i))
              .build();
      records.add(CapScenario.record("campaign-sends", send, sends.encode(send)));
    }
    return records;
  }

  private static double count(MeterRegistry metrics, String name, String reason) {
    Counter c = metrics.find(name).tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void badSegmentAndPolicyRecordsCostThemselvesOnlyAlsoAfterARestart() throws Exception {
    Properties settings =
        CapScenario.settings(
            dir, kafka.bootstrapServers(), "redis://127.0.0.1:1", "hostile-global");
    new PolicyTopic(CapScenario.config(settings, ""), Duration.ofSeconds(30)).ensureExists();
    produceBadGlobalRecords("policies");
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader = new TopicReader(kafka.bootstrapServers(), "deliveries")) {
      settings.setProperty("cap.redis.uri", redis.uri());
      for (String run : List.of("first", "restarted")) {
        long firstUser = run.equals("first") ? 1_000 : 2_000;
        try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, ""))) {
          CapScenario.produce(kafka.bootstrapServers(), ordinarySends(run + "-", firstUser, 20));
          List<ConsumerRecord<byte[], byte[]>> out =
              reader.awaitRecords(run.equals("first") ? 20 : 40, Duration.ofMinutes(1));

          assertThat(out.subList(out.size() - 20, out.size()))
              .extracting(r -> deliveries.decode(r.value()).getSend().getMessageId().toString())
              .as("every ordinary send of the %s run delivered once", run)
              .containsExactlyInAnyOrderElementsOf(
                  ordinarySends(run + "-", firstUser, 20).stream()
                      .map(r -> sends.decode(r.value()).getMessageId().toString())
                      .toList());
          MeterRegistry m = app.metrics();
          assertThat(count(m, "sendcap.segments.rejected", "invalid")).isEqualTo(2);
          assertThat(count(m, "sendcap.segments.rejected", "malformed")).isEqualTo(2);
          assertThat(count(m, "sendcap.segments.rejected", "too-large")).isEqualTo(1);
          assertThat(count(m, "sendcap.policies.rejected", "invalid")).isEqualTo(2);
          assertThat(app.segments().version("vip")).isEqualTo(1);
          assertThat(m.find("sendcap.stream.threads.replaced").counters())
              .as("stream threads replaced")
              .isEmpty();
          assertThat(app.state().isRunningOrRebalancing()).isTrue();
        }
      }
    }
  }
}
