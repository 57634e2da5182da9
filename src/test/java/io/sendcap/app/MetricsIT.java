package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The operators' endpoint of a running application: health that follows Kafka Streams and Redis,
 * and Prometheus counters equal to the records on the output topics.
 */
class MetricsIT {
  private static final int SENDS = 5_000;

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
      List<ConsumerRecord<byte[], byte[]>> out = reader.awaitRecords(SENDS, Duration.ofMinutes(2));
      out = reader.drain(Duration.ofSeconds(1));
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
