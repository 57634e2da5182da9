package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
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
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operators' endpoint of a running application: health that follows Kafka Streams and Redis,
 * Prometheus counters equal to the records on the output topics, and liveness that fails when
 * stream threads are replaced in a crash loop.
 */
class MetricsIT {
  private static final int SENDS = 5_000;
  private static final String REPLACED = "sendcap_stream_threads_replaced_total";

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
   * A send too big for the producer (a small {@code max.request.size} here stands for a send just
   * under the broker's limit, whose buffered copy and delivery are a little bigger): neither can
   * ever be written, so each stream thread that takes its task fails on the same send and is
   * replaced.
   */
  @Test
  void threadsReplacedInACrashLoopAreCountedAndFailLiveness() {
    kafka.createTopics(1, "sends-big", "deliveries-big", "suppressed-big", "dlq-big");
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties settings =
          CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "crash-loop");
      settings.setProperty("topic.input", "sends-big");
      settings.setProperty("producer.max.request.size", "10000");
      settings.setProperty("health.live.max-thread-replacements", "2");
      // A failed thread's consumer stays in the group until its session times out (45 s by
      // default), and its replacement is assigned the task only then.
      settings.setProperty("session.timeout.ms", "6000");
      settings.setProperty("heartbeat.interval.ms", "1000");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, "-big"))) {
        int port = app.httpPort();
        assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
        assertThat(get(port, "/metrics").body()).doesNotContain(REPLACED);

        ScheduledSend big =
            ScheduledSend.newBuilder()
                .setMessageId("big-1")
                .setCampaignId("c")
                .setUserId(5_000)
                .setChannel(Channel.EMAIL)
                .setScheduledAt(Instant.now())
                .setAttributes(Map.of("body", "x".repeat(20_000)))
                .build();
        CapScenario.produce(
            kafka.bootstrapServers(),
            List.of(
                CapScenario.record(
                    "sends-big",
                    big,
                    new SingleObjectAvroSerde<>(ScheduledSend.class).encode(big))));

        TopicReader.await(
            "liveness to fail",
            Duration.ofMinutes(2),
            () -> get(port, "/health/live").statusCode() == 503);
        HttpResponse<String> live = get(port, "/health/live");
        assertThat(live.statusCode()).isEqualTo(503);
        assertThat(live.body())
            .matches(
                Pattern.quote(
                        "{\"status\":\"DOWN\",\"detail\":\"3 stream thread replacements within"
                            + " 600000 ms (health.live.replacement-window.ms), more than"
                            + " health.live.max-thread-replacements=2; last: ")
                    + "\\w+(Exception|Error): [^\\n]+\"}\n");
        assertThat(sum(get(port, "/metrics").body(), REPLACED)).isGreaterThanOrEqualTo(3);
        assertThat(app.state().isRunningOrRebalancing())
            .as("Kafka Streams itself goes on replacing threads")
            .isTrue();
      }
    }
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
