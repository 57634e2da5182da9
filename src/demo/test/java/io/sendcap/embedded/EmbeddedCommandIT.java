package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.testing.Cli;
import io.sendcap.testing.ForkedSendcap;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
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

  /**
   * {@code embedded --secure} as README's secured sections describe it: the operator publishes the
   * segments with the tools' settings file, sendcap runs with its own (README's least rights), a
   * send produced by the operator is decided, and no password is printed.
   */
  @Test
  void secureGivesServersThatSendcapAndTheToolsUseWithTheSettingsFilesItPrints(@TempDir Path dir)
      throws Exception {
    List<String> args = List.of("embedded", "--secure", "--no-schema-registry");
    try (ForkedSendcap embedded =
        ForkedSendcap.start(args, dir.resolve("embedded.log"), STARTUP, READY)) {
      String printed = embedded.output();
      Path sendcap = Path.of(after(printed, "sendcap's settings (README's least rights): "));
      Path operator = Path.of(after(printed, "the tools' settings (principal operator): "));
      Properties settings = new Properties();
      try (var in = Files.newBufferedReader(sendcap)) {
        settings.load(in);
      }
      String uri = settings.getProperty("cap.redis.uri");
      String password = uri.substring(uri.indexOf(':', 9) + 1, uri.indexOf('@'));
      assertThat(settings.getProperty("security.protocol")).isEqualTo("SASL_SSL");
      assertThat(printed).contains("rediss://sendcap:[hidden]@").doesNotContain(password);

      for (String segment : List.of("new-users", "active", "dormant")) {
        Cli.Result published =
            Cli.run(
                "segments",
                "publish",
                "--config",
                operator.toString(),
                "--name",
                segment,
                "--ids",
                "config/segments/" + segment + ".ids");
        assertThat(published.exit()).as(published.err()).isZero();
      }
      try (ForkedSendcap run =
          ForkedSendcap.start(
              sendcap,
              dir.resolve("run.log"),
              STARTUP,
              "http.port=0",
              "state.dir=" + dir.resolve("state"))) {
        Cli.Result produced =
            Cli.run(
                "produce",
                "--config",
                operator.toString(),
                "--topic",
                "campaign-sends",
                "--file",
                "config/examples/sends-1.jsonl");
        assertThat(produced.exit()).as(produced.err()).isZero();
        TopicReader.await(
            "the first example send delivered",
            Duration.ofMinutes(1),
            () ->
                Cli.run(
                        "consume",
                        "--config",
                        operator.toString(),
                        "--topic",
                        "deliveries",
                        "--from-beginning",
                        "--until-end",
                        "--json")
                    .out()
                    .contains("\"messageId\":\"w-1\""));
        assertThat(run.output()).doesNotContain(password).contains("sasl.jaas.config=[hidden]");
      }
    }
  }

  /** The rest of the line of {@code text} that starts with {@code prefix}. */
  private static String after(String text, String prefix) {
    return text.lines()
        .filter(l -> l.startsWith(prefix))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no line " + prefix + "... in:\n" + text))
        .substring(prefix.length());
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

  /**
   * {@code --secure} makes its certificate and passwords in a temporary directory, deleted when
   * {@code embedded} stops: a start that fails deletes it too, leaving no keystore or password
   * behind.
   */
  @Test
  void aSecureStartThatFailsLeavesNoCertificateOrPasswordBehind() throws Exception {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    List<Path> before = secureDirs(tmp);
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Cli.Result failed =
          Cli.run(
              "embedded",
              "--secure",
              "--no-schema-registry",
              "--redis-port",
              String.valueOf(taken.getLocalPort()));

      assertThat(failed.exit()).isNotZero();
      assertThat(failed.err()).contains("(--redis-port) is in use");
    }
    assertThat(secureDirs(tmp)).as("the run's secured-setup directories").isEqualTo(before);
  }

  private static List<Path> secureDirs(Path tmp) throws IOException {
    try (Stream<Path> all = Files.list(tmp)) {
      return all.filter(p -> p.getFileName().toString().startsWith("sendcap-secure-"))
          .sorted()
          .toList();
    }
  }
}
