package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.testing.Cli;
import io.sendcap.testing.TestKafka;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sendcap produce} and {@code consume} as the campaign engine's and analysts' people use
 * them.
 */
class ProduceConsumeIT {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private static TestKafka kafka;
  @TempDir static Path dir;

  @BeforeAll
  static void start() {
    kafka = TestKafka.start();
    kafka.createTopics(2, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  private static String[] args(String command, String... more) {
    String[] base = {
      command,
      "--config",
      "config/sendcap.properties",
      "--set",
      "bootstrap.servers=" + kafka.bootstrapServers()
    };
    String[] all = new String[base.length + more.length];
    System.arraycopy(base, 0, all, 0, base.length);
    System.arraycopy(more, 0, all, base.length, more.length);
    return all;
  }

  @Test
  void goodLinesAreSentBadOnesReportedByLineNumberAndConsumeReadsThemBack() throws IOException {
    Path file = dir.resolve("sends.jsonl");
    Files.write(
        file,
        List.of(
            "{\"messageId\":\"a\",\"campaignId\":\"c\",\"userId\":7,\"channel\":\"EMAIL\","
                + "\"scheduledAt\":\"2026-11-22T10:00:00Z\"}",
            "{not json",
            "{\"messageId\":\"b\",\"campaignId\":\"c\",\"userId\":8,\"channel\":\"PUSH\","
                + "\"scheduledAt\":1795341600000,\"userTimeZone\":\"Europe/Berlin\","
                + "\"attributes\":{\"lang\":\"de\"}}",
            "{\"messageId\":\"x\",\"campaignId\":\"c\",\"userId\":9,\"channel\":\"FAX\","
                + "\"scheduledAt\":\"2026-11-22T10:00:00Z\"}",
            "{\"messageId\":\"y\",\"campaignId\":\"c\",\"channel\":\"SMS\","
                + "\"scheduledAt\":\"2026-11-22T10:00:00Z\"}",
            "",
            "{\"messageId\":\"c\",\"campaignId\":\"c\",\"userId\":7,\"channel\":\"SMS\","
                + "\"scheduledAt\":\"2026-11-22T11:00:00Z\",\"transactional\":true}"),
        StandardCharsets.UTF_8);

    Cli.Result produced =
        Cli.run(args("produce", "--topic", "campaign-sends", "--file", file.toString()));

    assertThat(produced.exit()).as(produced.err()).isEqualTo(1);
    assertThat(produced.out()).contains("3 records produced to campaign-sends, 3 bad lines");
    assertThat(produced.err())
        .contains(file + ":2: not JSON")
        .contains(
            file
                + ":4: ScheduledSend.channel must be one of [EMAIL, PUSH, SMS, IN_APP], was"
                + " \"FAX\"")
        .contains(file + ":5: ScheduledSend.userId is missing");

    Cli.Result consumed =
        Cli.run(
            args(
                "consume",
                "--topic",
                "campaign-sends",
                "--from-beginning",
                "--json",
                "--max",
                "3"));
    assertThat(consumed.exit()).isZero();
    List<JsonNode> sends = consumed.lines().stream().map(ProduceConsumeIT::json).toList();
    assertThat(sends)
        .extracting(s -> s.get("messageId").asText())
        .containsExactlyInAnyOrder("a", "b", "c");
    JsonNode b =
        sends.stream().filter(s -> s.get("messageId").asText().equals("b")).findFirst().get();
    assertThat(b.get("scheduledAt").asText()).isEqualTo("2026-11-22T10:00:00Z");
    assertThat(b.get("userTimeZone").asText()).isEqualTo("Europe/Berlin");
    assertThat(b.get("attributes").get("lang").asText()).isEqualTo("de");
    assertThat(b.get("transactional").asBoolean()).isFalse();
  }

  @Test
  void deadLettersAreShownWithTheirReason() {
    RecordHeaders headers = new RecordHeaders();
    headers.add("__streams.errors.message", "messageId is empty".getBytes(StandardCharsets.UTF_8));
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of("bootstrap.servers", kafka.bootstrapServers()),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      producer.send(
          new ProducerRecord<>(
              "campaign-sends-dlq",
              null,
              null,
              "k".getBytes(StandardCharsets.UTF_8),
              "raw".getBytes(StandardCharsets.UTF_8),
              headers));
    }

    Cli.Result consumed =
        Cli.run(
            args(
                "consume",
                "--topic",
                "campaign-sends-dlq",
                "--from-beginning",
                "--json",
                "--max",
                "1"));

    JsonNode letter = json(consumed.lines().get(0));
    assertThat(letter.get("message").asText()).isEqualTo("messageId is empty");
    assertThat(letter.get("value").asText()).isEqualTo("cmF3");
  }

  @Test
  void aTopicThatIsNotSendcapsOrDoesNotExistIsAClearError() {
    Cli.Result unknown = Cli.run(args("consume", "--topic", "nope", "--max", "1"));
    assertThat(unknown.exit()).isEqualTo(2);
    assertThat(unknown.err()).startsWith("sendcap: topic nope is not one of sendcap's:");

    Cli.Result missing =
        Cli.run(args("consume", "--topic", "absent", "--set", "topic.input=absent", "--max", "1"));
    assertThat(missing.exit()).isEqualTo(2);
    assertThat(missing.err()).startsWith("sendcap: topic absent does not exist on ");
  }

  @Test
  void anUnreachableBrokerIsAClearErrorNotAStackTrace() throws IOException {
    Path file = dir.resolve("one.jsonl");
    Files.writeString(file, "{}\n");
    Cli.Result r =
        Cli.run(
            "produce",
            "--set",
            "bootstrap.servers=127.0.0.1:1",
            "--topic",
            "campaign-sends",
            "--file",
            file.toString());
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err().strip())
        .isEqualTo("sendcap: cannot reach Kafka at 127.0.0.1:1 within 15 s (bootstrap.servers)");
  }

  private static JsonNode json(String line) {
    try {
      return MAPPER.readTree(line);
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + line, e);
    }
  }
}
