package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operators' endpoint of a running application: health that follows Kafka Streams and Redis,
 * Prometheus counters equal to the records on the output topics, and a send too large to write
 * counted as a dead letter instead of starting a crash loop (liveness failing in one is {@code
 * ThreadReplacementsTest}'s).
 */
class MetricsIT {
  private static final int SENDS = 5_000;
  private static final String REPLACED = "sendcap_stream_threads_replaced_total";

  private static final SingleObjectAvroSerde<Delivery> DELIVERIES =
      new SingleObjectAvroSerde<>(Delivery.class);
  private static final SingleObjectAvroSerde<Suppression> SUPPRESSIONS =
      new SingleObjectAvroSerde<>(Suppression.class);

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();
  private final HttpClient http = HttpClient.newHttpClient();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    kafka.createTopics(4, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  @Test
  void countersEqualTheOutputTopicsAndHealthFollowsStreamsAndRedis() throws Exception {
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("campaign-sends", SENDS, 500, 50, 20, 3);
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        SendcapApp app =
            SendcapApp.start(
                CapScenario.config(
                    CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "metrics"),
                    ""));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(), "deliveries", "suppressed", "campaign-sends-dlq")) {
      int port = app.httpPort();
      assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
      TopicReader.await(
          "readiness", Duration.ofMinutes(1), () -> get(port, "/health/ready").statusCode() == 200);

      CapScenario.produce(kafka.bootstrapServers(), input);
      reader.awaitRecords(SENDS, Duration.ofMinutes(2));
      // Done, with the application running: it has read every send, holds none undecided, and
      // every output it counted is committed; so no output and no count is still to come.
      AppProgress.awaitInputCommitted(
          kafka.bootstrapServers(), "metrics", "campaign-sends", Duration.ofMinutes(1));
      TopicReader.await(
          "no send undecided",
          Duration.ofMinutes(1),
          () -> app.metrics().get("sendcap.sends.undecided").gauge().value() == 0);
      List<ConsumerRecord<byte[], byte[]>> out =
          AppProgress.awaitOutputsCommitted(app.metrics(), reader, Duration.ofMinutes(1));
      String metrics = get(port, "/metrics").body();

      assertThat(sum(metrics, "sendcap_sends_allowed_total"))
          .isEqualTo(count(out, "deliveries"))
          .isPositive();
      assertThat(sum(metrics, "sendcap_sends_suppressed_total"))
          .isEqualTo(count(out, "suppressed"))
          .isPositive();
      assertThat(sum(metrics, "sendcap_sends_dead_letters_total"))
          .isEqualTo(count(out, "campaign-sends-dlq"))
          .isPositive();
      assertThat(sum(metrics, "sendcap_segment_version", "segment=\"vip\"")).isEqualTo(1);
      assertThat(sum(metrics, "sendcap_batch_size_sends_count")).isPositive();
      assertThat(sum(metrics, "sendcap_redis_round_trip_seconds_count")).isPositive();
      // a few sends may never find their batch unanswered: the meter is there, at any count
      assertThat(metrics).contains("sendcap_batch_wait_seconds_count");
      assertThat(sum(metrics, "sendcap_limiter_unavailable")).isZero();
      assertThat(metrics).contains("kafka_stream_");

      redis.stopKeepingData();
      HttpResponse<String> ready = get(port, "/health/ready");
      assertThat(ready.statusCode()).isEqualTo(503);
      assertThat(ready.body()).contains("\"status\":\"DOWN\"");
      assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
      redis.restart();
      TopicReader.await(
          "readiness after Redis is back",
          Duration.ofMinutes(1),
          () -> get(port, "/health/ready").statusCode() == 200);
    }
  }

  /**
   * A send of 3 MB produced with gzip in the middle of ordinary sends: the broker takes the
   * compressed batch, but the send's delivery, which embeds it, is larger than the producer may
   * write (max.request.size, 1 MiB before compression). It goes to the dead-letter topic before it
   * is decided, as a small record with the reason, its key and where it was read, never its body;
   * every ordinary send, those after it too, is decided, and no stream thread is replaced (the
   * crash loop this used to start).
   */
  @Test
  void aSendTooLargeToWriteGoesToTheDeadLetterTopicAndTheSendsAfterItAreDecided() {
    kafka.createTopics(1, "sends-big", "deliveries-big", "suppressed-big", "dlq-big");
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties settings =
          CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "too-large");
      settings.setProperty("topic.input", "sends-big");
      settings.setProperty("health.live.max-thread-replacements", "0");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, "-big"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(), "deliveries-big", "suppressed-big", "dlq-big")) {
        int port = app.httpPort();
        SingleObjectAvroSerde<ScheduledSend> serde =
            new SingleObjectAvroSerde<>(ScheduledSend.class);
        List<ProducerRecord<byte[], byte[]>> input = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
          if (i == 10) {
            ScheduledSend big = ordinary(5_000, "big");
            big.setAttributes(Map.of("body", "x".repeat(3_000_000)));
            input.add(CapScenario.record("sends-big", big, serde.encode(big)));
          }
          ScheduledSend send = ordinary(i, "m" + i);
          input.add(CapScenario.record("sends-big", send, serde.encode(send)));
        }
        produceCompressed(input);

        List<ConsumerRecord<byte[], byte[]>> out = reader.awaitRecords(31, Duration.ofMinutes(2));
        assertThat(count(out, "deliveries-big") + count(out, "suppressed-big"))
            .as("every ordinary send decided")
            .isEqualTo(30);
        List<ConsumerRecord<byte[], byte[]>> dead =
            out.stream().filter(r -> r.topic().equals("dlq-big")).toList();
        assertThat(dead).hasSize(1);
        ConsumerRecord<byte[], byte[]> letter = dead.get(0);
        assertThat(letter.value()).as("not its body").isNull();
        assertThat(letter.serializedKeySize() + letter.serializedValueSize()).isLessThan(100);
        assertThat(new String(letter.key(), StandardCharsets.UTF_8)).isEqualTo("5000");
        assertThat(header(letter, "__streams.errors.message"))
            .startsWith("the send is 30000")
            .contains("more than cap.max-send-bytes=1032192");
        assertThat(header(letter, "__streams.errors.topic")).isEqualTo("sends-big");
        assertThat(header(letter, "__streams.errors.partition")).isEqualTo("0");
        assertThat(header(letter, "__streams.errors.offset")).isEqualTo("10");
        assertThat(header(letter, "sendcap.errors.dropped")).startsWith("value 30000");

        String metrics = get(port, "/metrics").body();
        assertThat(sum(metrics, "sendcap_sends_dead_letters_total", "reason=\"too-large\""))
            .isEqualTo(1);
        assertThat(metrics).doesNotContain(REPLACED);
        assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
      }
    }
  }

  /**
   * The last line of defence, under at_least_once: a topic whose max.message.bytes is below what
   * the producer may write refuses a delivery that cap.max-send-bytes let through. The production
   * exception handler sends it to the dead-letter topic as a small record and the sends after it
   * are decided; no stream thread is replaced.
   *
   * <p>The broker's refusal reaches the handler on the producer's own thread, where a first record
   * to the dead-letter topic waits for that topic's metadata, which only that thread fetches, until
   * max.block.ms: the task is then re-initialised and reads its sends again from the last commit
   * (at least once: a decision may be written twice), and the dead letter is written the second
   * time. max.block.ms is short here so that this costs seconds, not a minute.
   */
  @Test
  void anOutputATopicRefusesGoesToTheDeadLetterTopicUnderAtLeastOnce() throws Exception {
    kafka.createTopics(1, "sends-refused", "suppressed-refused", "dlq-refused");
    try (Admin admin =
        Admin.create(
            Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
      admin
          .createTopics(
              List.of(
                  new NewTopic("deliveries-refused", 1, (short) 1)
                      .configs(Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, "20000"))))
          .all()
          .get();
    }
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties settings =
          CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "refused");
      settings.setProperty("topic.input", "sends-refused");
      settings.setProperty("processing.guarantee", "at_least_once");
      settings.setProperty("producer.max.block.ms", "5000");
      settings.setProperty("health.live.max-thread-replacements", "0");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, "-refused"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(),
                  "deliveries-refused",
                  "suppressed-refused",
                  "dlq-refused")) {
        int port = app.httpPort();
        SingleObjectAvroSerde<ScheduledSend> serde =
            new SingleObjectAvroSerde<>(ScheduledSend.class);
        List<ProducerRecord<byte[], byte[]>> input = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
          if (i == 10) {
            ScheduledSend large = ordinary(5_000, "large");
            large.setAttributes(Map.of("body", "x".repeat(50_000)));
            input.add(CapScenario.record("sends-refused", large, serde.encode(large)));
          }
          ScheduledSend send = ordinary(i, "m" + i);
          input.add(CapScenario.record("sends-refused", send, serde.encode(send)));
        }
        produceCompressed(input);

        List<ConsumerRecord<byte[], byte[]>> out =
            reader.awaitUntil(
                "every other send decided and the large one dead-lettered",
                Duration.ofMinutes(2),
                read -> decidedIds(read).size() == 20 && count(read, "dlq-refused") > 0);
        assertThat(decidedIds(out)).doesNotContain("large");
        assertThat(count(out, "dlq-refused")).isEqualTo(1);
        ConsumerRecord<byte[], byte[]> letter =
            out.stream().filter(r -> r.topic().equals("dlq-refused")).findFirst().orElseThrow();
        assertThat(letter.value()).isNull();
        assertThat(new String(letter.key(), StandardCharsets.UTF_8)).isEqualTo("5000");
        assertThat(header(letter, "__streams.errors.message"))
            .startsWith("its output to deliveries-refused could not be written: ");
        assertThat(header(letter, "__streams.errors.topic")).isEqualTo("sends-refused");
        assertThat(header(letter, "__streams.errors.partition")).isEqualTo("0");
        String metrics = get(port, "/metrics").body();
        // counted at each attempt: the first, whose dead letter timed out, too
        assertThat(sum(metrics, "sendcap_sends_dead_letters_total", "reason=\"unwritable\""))
            .isBetween(1L, 2L);
        assertThat(metrics).doesNotContain(REPLACED);
        assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
      }
    }
  }

  /** The message ids of the sends decided in {@code records}, each once. */
  private static Set<String> decidedIds(List<ConsumerRecord<byte[], byte[]>> records) {
    Set<String> ids = new HashSet<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().startsWith("deliveries")) {
        ids.add(DELIVERIES.decode(r.value()).getSend().getMessageId());
      } else if (r.topic().startsWith("suppressed")) {
        ids.add(SUPPRESSIONS.decode(r.value()).getSend().getMessageId());
      }
    }
    return ids;
  }

  private static ScheduledSend ordinary(long user, String id) {
    return ScheduledSend.newBuilder()
        .setMessageId(id)
        .setCampaignId("c")
        .setUserId(user)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(Instant.now())
        .build();
  }

  /** Produces the records in gzip-compressed batches, as a campaign engine may. */
  private static void produceCompressed(List<ProducerRecord<byte[], byte[]>> records) {
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ProducerConfig.COMPRESSION_TYPE_CONFIG,
            "gzip",
            // the producer's own bound is on the uncompressed size; the broker's is on the batch
            ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
            8_000_000,
            ProducerConfig.BATCH_SIZE_CONFIG,
            8_000_000);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      records.forEach(producer::send);
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    assertThat(h).as(name).isNotNull();
    return new String(h.value(), StandardCharsets.UTF_8);
  }

  private static long count(List<ConsumerRecord<byte[], byte[]>> records, String topic) {
    return records.stream().filter(r -> r.topic().equals(topic)).count();
  }

  /** The sum of every sample of a metric in the Prometheus text format. */
  private static long sum(String metrics, String name) {
    return sum(metrics, name, "");
  }

  /** The sum of the samples of a metric whose labels contain {@code label}. */
  private static long sum(String metrics, String name, String label) {
    double total = 0;
    for (String line : metrics.split("\n")) {
      if ((line.startsWith(name + "{") || line.startsWith(name + " ")) && line.contains(label)) {
        total += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return Math.round(total);
  }

  private HttpResponse<String> get(int port, String path) {
    try {
      return http.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new AssertionError("GET " + path + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
