package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.testing.Cli;
import io.sendcap.testing.ForkedSendcap;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
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
        .contains(file + ":2: not JSON (it goes wrong at column 2); each line is one JSON object")
        .doesNotContain("Unexpected character")
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

    Cli.Result toTheEnd =
        Cli.run(args("consume", "--topic", "campaign-sends", "--from-beginning", "--until-end"));
    assertThat(toTheEnd.exit()).as(toTheEnd.err()).isZero();
    assertThat(toTheEnd.lines()).hasSize(3);
  }

  /**
   * A file as a campaign engine's people produce it: sends scheduled over the coming week and a
   * backfill dated 8 to 10 days back, on a broker with a production broker's defaults (records at
   * most an hour ahead, 7 days' retention). Stamped when produced (the default), every record is
   * kept. Stamped with scheduledAt, the broker refuses the sends more than an hour ahead, and
   * produce says why, each reason once; it accepts the old ones and deletes them at its next
   * retention check (every second on the test broker, every 5 minutes by default).
   */
  @Test
  void recordsAreStampedWhenProducedSoTheBrokerKeepsSendsScheduledDaysAheadOrBehind()
      throws IOException {
    Instant now = Instant.now();
    List<String> week = new ArrayList<>();
    for (int i = 0; i < 100; i++) { // from 2 hours to 7 days ahead
      week.add(sendLine("w" + i, now.plus(Duration.ofHours(2)).plusSeconds(5_940L * i)));
    }
    List<String> old = new ArrayList<>();
    for (int i = 0; i < 20; i++) { // from 8 to 10 days back
      old.add(sendLine("o" + i, now.minus(Duration.ofDays(8)).minusSeconds(8_640L * i)));
    }
    Path weekFile = dir.resolve("week.jsonl");
    Files.write(weekFile, week, StandardCharsets.UTF_8);
    Path oldFile = dir.resolve("old.jsonl");
    Files.write(oldFile, old, StandardCharsets.UTF_8);
    Path bothFile = dir.resolve("both.jsonl");
    List<String> both = new ArrayList<>(week);
    both.addAll(old);
    Files.write(bothFile, both, StandardCharsets.UTF_8);
    kafka.createTopics(1, "stamped-produced", "stamped-scheduled", "old-scheduled");

    long before = System.currentTimeMillis();
    Cli.Result produced =
        Cli.run(
            args(
                "produce",
                "--set",
                "topic.input=stamped-produced",
                "--topic",
                "stamped-produced",
                "--file",
                bothFile.toString()));
    long after = System.currentTimeMillis();
    assertThat(produced.exit()).as(produced.err()).isZero();
    assertThat(produced.out()).contains("120 records produced to stamped-produced, 0 bad lines");
    List<ConsumerRecord<byte[], byte[]>> kept;
    try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), "stamped-produced")) {
      kept = reader.awaitRecords(120, Duration.ofSeconds(30));
    }
    assertThat(kept)
        .allSatisfy(
            r -> {
              assertThat(r.timestampType()).isEqualTo(TimestampType.CREATE_TIME);
              assertThat(r.timestamp()).isBetween(before, after);
            });

    Cli.Result refused =
        Cli.run(
            args(
                "produce",
                "--set",
                "topic.input=stamped-scheduled",
                "--topic",
                "stamped-scheduled",
                "--timestamp=scheduled",
                "--file",
                weekFile.toString()));
    assertThat(refused.exit()).as(refused.err()).isEqualTo(2);
    List<String> err = refused.err().lines().toList();
    assertThat(err).contains("sendcap: 100 records could not be written to stamped-scheduled:");
    List<String> reasons = err.stream().filter(l -> l.matches(" +[0-9,]+  .*")).toList();
    assertThat(reasons).as("each reason once").doesNotHaveDuplicates().hasSizeLessThan(5);
    assertThat(reasons.stream().mapToLong(l -> Long.parseLong(l.strip().split(" ")[0])).sum())
        .as("the records refused, by reason")
        .isEqualTo(100);
    assertThat(reasons)
        .anyMatch(
            l ->
                l.matches(
                    " +[0-9,]+  Invalid(Timestamp|Record)Exception: Timestamp [0-9]+ of message"
                        + " with offset [0-9]+ is out of range. The timestamp should be within"
                        + " \\[-?[0-9]+, [0-9]+\\]"));
    assertThat(err)
        .contains(
            "sendcap: a broker refuses records stamped more than"
                + " log.message.timestamp.after.max.ms (1 hour by default) ahead of its clock or"
                + " log.message.timestamp.before.max.ms behind it; without --timestamp=scheduled"
                + " records are stamped when produced");
    assertThat(readable("stamped-scheduled")).isZero();

    Cli.Result backfill =
        Cli.run(
            args(
                "produce",
                "--set",
                "topic.input=old-scheduled",
                "--topic",
                "old-scheduled",
                "--timestamp=scheduled",
                "--file",
                oldFile.toString()));
    assertThat(backfill.exit()).as(backfill.err()).isZero();
    assertThat(backfill.out()).contains("20 records produced to old-scheduled");
    TopicReader.await(
        "the broker's retention to delete records stamped 8 to 10 days back",
        Duration.ofSeconds(60),
        () -> readable("old-scheduled") == 0);
    assertThat(readable("stamped-produced"))
        .as("the same sends stamped when produced, after that retention check")
        .isEqualTo(120);
  }

  private static String sendLine(String id, Instant scheduledAt) {
    return "{\"messageId\":\""
        + id
        + "\",\"campaignId\":\"c\",\"userId\":7,\"channel\":\"EMAIL\",\"scheduledAt\":\""
        + scheduledAt
        + "\"}";
  }

  /** The records of a topic a consumer can still read: from its log start to its end. */
  private static long readable(String topic) {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", kafka.bootstrapServers()))) {
      TopicPartition p = new TopicPartition(topic, 0);
      long start =
          admin.listOffsets(Map.of(p, OffsetSpec.earliest())).partitionResult(p).get().offset();
      long end =
          admin.listOffsets(Map.of(p, OffsetSpec.latest())).partitionResult(p).get().offset();
      return end - start;
    } catch (ExecutionException | InterruptedException e) {
      throw new AssertionError("cannot read the offsets of " + topic, e);
    }
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

  /** Run as a user runs it, in a JVM of its own: everything it prints is its one line. */
  @Test
  void anUnreachableBrokerIsOneClearLineAndNothingElse() throws Exception {
    Path file = dir.resolve("one.jsonl");
    Files.writeString(file, "{}\n");
    String refused = "sendcap: cannot reach Kafka at 127.0.0.1:1 within 15 s (bootstrap.servers)";
    ForkedSendcap produce =
        ForkedSendcap.run(
            List.of(
                "produce",
                "--set",
                "bootstrap.servers=127.0.0.1:1",
                "--topic",
                "campaign-sends",
                "--file",
                file.toString()),
            dir.resolve("produce.log"),
            Duration.ofMinutes(1));

    assertThat(produce.exitValue()).isEqualTo(2);
    assertThat(produce.output().strip()).isEqualTo(refused);
  }

  private static JsonNode json(String line) {
    try {
      return MAPPER.readTree(line);
    } catch (IOException e) {
      throw new AssertionError("not JSON: " + line, e);
    }
  }
}
