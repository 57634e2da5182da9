package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.testing.ForkedSendcap;
import io.sendcap.testing.TopicReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sendcap embedded --kafka-port --redis-port --registry-port --data-dir}, as a user restarts
 * it: the same addresses, and the topics, Redis keys and schemas written before.
 */
class EmbeddedCommandIT {
  private static final Duration STARTUP = Duration.ofMinutes(2);
  private static final String READY = "Press Ctrl-C to stop.";

  @Test
  void aRestartWithTheSameOptionsKeepsTheAddressesAndTheData(@TempDir Path dir) throws Exception {
    int kafka = FreePorts.pick();
    int redis = FreePorts.pick();
    int registry = FreePorts.pick();
    List<String> args =
        List.of(
            "embedded",
            "--kafka-port",
            "" + kafka,
            "--redis-port",
            "" + redis,
            "--registry-port",
            "" + registry,
            "--data-dir",
            dir.resolve("data").toString());

    try (ForkedSendcap first = ForkedSendcap.start(args, dir.resolve("1.log"), STARTUP, READY)) {
      assertThat(first.output())
          .contains("bootstrap.servers=127.0.0.1:" + kafka)
          .contains("bin/sendcap embedded --kafka-port " + kafka + " --redis-port " + redis);
      try (KafkaProducer<String, String> producer = producer(kafka)) {
        producer.send(new ProducerRecord<>("deliveries", "u1", "kept")).get();
      }
      assertThat(Resp.call(redis, "SET", "s{1}", "kept")).isEqualTo("OK");
      assertThat(register(registry)).contains("\"id\"");
    }

    try (ForkedSendcap second = ForkedSendcap.start(args, dir.resolve("2.log"), STARTUP, READY);
        TopicReader reader = new TopicReader("127.0.0.1:" + kafka, "deliveries")) {
      List<ConsumerRecord<byte[], byte[]>> records = reader.readToEnd(Duration.ofSeconds(30));
      assertThat(records)
          .extracting(r -> new String(r.value(), StandardCharsets.UTF_8))
          .containsExactly("kept");
      assertThat(Resp.call(redis, "GET", "s{1}")).isEqualTo("kept");
      assertThat(get(registry, "/subjects")).contains("kept-value");
    }
  }

  private static KafkaProducer<String, String> producer(int port) {
    return new KafkaProducer<>(
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port),
        new StringSerializer(),
        new StringSerializer());
  }

  private static String register(int port) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(uri(port, "/subjects/kept-value/versions"))
            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
            .POST(
                HttpRequest.BodyPublishers.ofString(
                    "{\"schema\":\"{\\\"type\\\":\\\"string\\\"}\"}"))
            .build();
    return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString()).body();
  }

  private static String get(int port, String path) throws Exception {
    return HttpClient.newHttpClient()
        .send(HttpRequest.newBuilder(uri(port, path)).build(), HttpResponse.BodyHandlers.ofString())
        .body();
  }

  private static URI uri(int port, String path) {
    return URI.create("http://127.0.0.1:" + port + EmbeddedRegistry.CCOMPAT_PATH + path);
  }
}
