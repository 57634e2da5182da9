package io.sendcap.app;

import static io.sendcap.avro.Channel.EMAIL;
import static io.sendcap.avro.Channel.PUSH;
import static io.sendcap.avro.Channel.SMS;
import static io.sendcap.avro.SuppressionReason.CAP;
import static io.sendcap.avro.SuppressionReason.GLOBAL_CAP;
import static io.sendcap.avro.SuppressionReason.LIMITER_UNAVAILABLE;
import static io.sendcap.avro.SuppressionReason.MIN_INTERVAL;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.Cli;
import io.sendcap.testing.Suppressions;
import io.sendcap.testing.TestKafka;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sendcap report} on a real broker: known suppressions, written the way sendcap writes them
 * (in transactions, one of them aborted), counted back as a table, JSON lines and an HTML page.
 */
class ReportIT {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final Instant START = Instant.parse("2026-11-20T06:00:00Z");
  private static final String SCRIPT = "<script>alert(1)</script>";

  private static final List<Suppression> WRITTEN = new ArrayList<>();
  private static TestKafka kafka;
  @TempDir static Path dir;

  @BeforeAll
  static void start() {
    kafka = TestKafka.start();
    kafka.createTopics(3, "suppressed", "mixed");
    // Spread over 40 hours: one bar per hour.
    group(30, "bf", "active", EMAIL, CAP, "1d", false);
    group(12, "bf", "dormant", PUSH, CAP, "7d", false);
    group(7, "nl", "default", EMAIL, MIN_INTERVAL, null, false);
    group(4, "nl", "default", EMAIL, GLOBAL_CAP, "campaign-budget:nl", false);
    group(3, "nl", "new-users", SMS, LIMITER_UNAVAILABLE, null, false);
    group(2, SCRIPT, "active", EMAIL, CAP, "calendar-day", false);
    group(8, "bf", "active", EMAIL, CAP, "1d", true);
    List<Suppression> aborted = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      aborted.add(Suppressions.of("aborted", "active", EMAIL, CAP, "1d", false, START));
    }
    writeInTransactions("suppressed", WRITTEN, aborted);
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  /**
   * Adds {@code n} suppressions alike but for their time, spread over 40 hours from START; {@code
   * cap} is the window of a CAP or the name of a GLOBAL_CAP.
   */
  private static void group(
      int n,
      String campaign,
      String segment,
      Channel channel,
      SuppressionReason reason,
      String cap,
      boolean shadow) {
    for (int i = 0; i < n; i++) {
      Instant at = START.plus(Duration.ofMinutes((WRITTEN.size() * 97L) % (40 * 60)));
      WRITTEN.add(
          reason == GLOBAL_CAP
              ? Suppressions.global(campaign, segment, channel, cap, at)
              : Suppressions.of(campaign, segment, channel, reason, cap, shadow, at));
    }
  }

  /** Writes {@code committed} in one transaction, then {@code aborted} in one that is aborted. */
  private static void writeInTransactions(
      String topic, List<Suppression> committed, List<Suppression> aborted) {
    SingleObjectAvroSerde<Suppression> serde = new SingleObjectAvroSerde<>(Suppression.class);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                kafka.bootstrapServers(),
                ProducerConfig.TRANSACTIONAL_ID_CONFIG,
                "report-it"),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      producer.initTransactions();
      for (List<Suppression> batch : List.of(committed, aborted)) {
        producer.beginTransaction();
        for (Suppression s : batch) {
          byte[] key = Long.toString(s.getSend().getUserId()).getBytes(StandardCharsets.UTF_8);
          producer.send(new ProducerRecord<>(topic, key, serde.encode(s)));
        }
        producer.flush();
        if (batch == committed) {
          producer.commitTransaction();
        } else {
          producer.abortTransaction();
        }
      }
    }
  }

  private static String[] args(String... more) {
    List<String> all =
        new ArrayList<>(
            List.of(
                "report",
                "--config",
                "config/sendcap.properties",
                "--set",
                "bootstrap.servers=" + kafka.bootstrapServers()));
    all.addAll(Arrays.asList(more));
    return all.toArray(String[]::new);
  }

  /** A table line split into its cells (separated by two spaces or more). */
  private static List<String> cells(String line) {
    return List.of(line.strip().split(" {2,}"));
  }

  @Test
  void theTableCountsEachGroupLargestFirstWithShadowApartAndTotals() {
    Cli.Result r = Cli.run(args());

    assertThat(r.exit()).as(r.err()).isZero();
    List<List<String>> lines = r.lines().stream().map(ReportIT::cells).toList();
    assertThat(lines)
        .containsExactly(
            List.of("mode", "campaign", "segment", "channel", "reason", "count"),
            List.of("enforced", "bf", "active", "EMAIL", "CAP 1d", "30"),
            List.of("enforced", "bf", "dormant", "PUSH", "CAP 7d", "12"),
            List.of("enforced", "nl", "default", "EMAIL", "MIN_INTERVAL", "7"),
            List.of("enforced", "nl", "default", "EMAIL", "GLOBAL_CAP campaign-budget", "4"),
            List.of("enforced", "nl", "new-users", "SMS", "LIMITER_UNAVAILABLE", "3"),
            List.of("enforced", SCRIPT, "active", "EMAIL", "CAP calendar-day", "2"),
            List.of("shadow", "bf", "active", "EMAIL", "CAP 1d", "8"),
            List.of("total enforced", "58"),
            List.of("total shadow", "8"));
    assertThat(r.err()).contains("66 records read from suppressed, 66 suppressions reported");
  }

  /**
   * The progress bar's total is in offsets, the only count known before reading (the aborted
   * transaction's records and the transaction markers take offsets too); it says so, and shows the
   * records read beside it, as the summary counts them.
   */
  @Test
  void theProgressBarSaysItCountsOffsetsAndShowsTheRecordsRead() {
    PrintStream stderr = System.err;
    ByteArrayOutputStream progress = new ByteArrayOutputStream();
    Cli.Result r;
    try {
      System.setErr(new PrintStream(progress, true, StandardCharsets.UTF_8));
      r = Cli.run(args());
    } finally {
      System.setErr(stderr);
    }

    assertThat(r.exit()).as(r.err()).isZero();
    String bar = progress.toString(StandardCharsets.UTF_8);
    String records = String.format("%,d records", WRITTEN.size());
    assertThat(bar).contains(" offsets").contains(records);
    assertThat(r.err()).contains(records + " read from suppressed");
  }

  @Test
  void jsonLinesCarryTheSameRowsForJq() {
    Cli.Result r = Cli.run(args("--json"));

    assertThat(r.exit()).as(r.err()).isZero();
    List<JsonNode> rows = r.lines().stream().map(ReportIT::json).toList();
    assertThat(rows).hasSize(7);
    assertThat(rows.get(0).toString())
        .isEqualTo(
            "{\"mode\":\"enforced\",\"campaignId\":\"bf\",\"segment\":\"active\","
                + "\"channel\":\"EMAIL\",\"reason\":\"CAP\",\"capWindow\":\"1d\","
                + "\"globalCap\":null,\"count\":30}");
    assertThat(rows.get(3).get("reason").asText()).isEqualTo("GLOBAL_CAP");
    assertThat(rows.get(3).get("globalCap").asText()).isEqualTo("campaign-budget");
    assertThat(rows.get(3).get("capWindow").isNull()).isTrue();
    assertThat(rows.get(4).get("reason").asText()).isEqualTo("LIMITER_UNAVAILABLE");
    assertThat(rows.get(6).get("mode").asText()).isEqualTo("shadow");
    assertThat(rows.get(6).get("count").asLong()).isEqualTo(8);
    assertThat(rows.stream().mapToLong(row -> row.get("count").asLong()).sum()).isEqualTo(66);
  }

  @Test
  void sinceUntilAndCampaignNarrowTheReport() {
    Instant since = START.plus(Duration.ofHours(5));
    Instant until = START.plus(Duration.ofHours(17));
    long expected =
        WRITTEN.stream()
            .filter(s -> s.getSend().getCampaignId().equals("bf") && !s.getShadow())
            .filter(s -> !s.getDecidedAt().isBefore(since) && s.getDecidedAt().isBefore(until))
            .count();

    Cli.Result r =
        Cli.run(
            args(
                "--json",
                "--campaign",
                "bf",
                "--since",
                since.toString(),
                "--until",
                until.toString()));

    assertThat(r.exit()).as(r.err()).isZero();
    List<JsonNode> rows = r.lines().stream().map(ReportIT::json).toList();
    assertThat(rows).allMatch(row -> row.get("campaignId").asText().equals("bf"));
    assertThat(
            rows.stream()
                .filter(row -> row.get("mode").asText().equals("enforced"))
                .mapToLong(row -> row.get("count").asLong())
                .sum())
        .isEqualTo(expected)
        .isBetween(1L, 41L);
  }

  @Test
  void theHtmlPageHasTheChartsAndTheTableWithRecordTextEscaped() throws IOException {
    Path page = dir.resolve("report.html");

    Cli.Result r = Cli.run(args("--html", page.toString()));

    assertThat(r.exit()).as(r.err()).isZero();
    String html = Files.readString(page);
    assertThat(Pattern.compile("<svg ").matcher(html).results().count()).isEqualTo(4);
    assertThat(html)
        .contains(">Enforced suppressions by reason<")
        .contains(">Enforced suppressions by segment<")
        .contains(">Shadow suppressions by reason<")
        .contains(">Shadow suppressions by segment<")
        .contains("decidedAt, UTC (one bar per hour)")
        .contains("<title>CAP 1d: 30</title>")
        .contains("<title>CAP 7d: 12</title>")
        .contains("<title>GLOBAL_CAP campaign-budget: 4</title>")
        .contains("<title>active: 32</title>")
        .contains(">enforced suppressions per hour<")
        .contains("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>")
        .contains("<td colspan=\"5\">total enforced</td><td class=\"n\">58</td>")
        .doesNotContain("<script")
        .doesNotContain("://");
  }

  @Test
  void recordsThatAreNotSuppressionsAreLeftOutAndSaidSo() {
    SingleObjectAvroSerde<Suppression> serde = new SingleObjectAvroSerde<>(Suppression.class);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      Suppression good = Suppressions.of("bf", "active", EMAIL, CAP, "1d", false, START);
      producer.send(new ProducerRecord<>("mixed", 0, null, serde.encode(good)));
      producer.send(
          new ProducerRecord<>("mixed", 0, null, "not Avro".getBytes(StandardCharsets.UTF_8)));
    }

    Cli.Result r = Cli.run(args("--topic", "mixed", "--json"));

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.lines()).hasSize(1);
    assertThat(json(r.lines().get(0)).get("count").asLong()).isEqualTo(1);
    assertThat(r.err())
        .contains(
            "sendcap: 1 of the records of mixed could not be read as Suppressions and were left"
                + " out (the first at 0@1: not a io.sendcap.avro.Suppression");
  }

  @Test
  void aTopicThatDoesNotExistIsAClearError() {
    Cli.Result r = Cli.run(args("--topic", "absent"));

    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err().strip())
        .isEqualTo("sendcap: topic absent does not exist on " + kafka.bootstrapServers());
  }

  @Test
  void anUnreachableBrokerIsAClearErrorNotAStackTrace() {
    Cli.Result r = Cli.run("report", "--set", "bootstrap.servers=127.0.0.1:1");

    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().strip())
        .isEqualTo("sendcap: cannot reach Kafka at 127.0.0.1:1 within 15 s (bootstrap.servers)");
  }

  private static JsonNode json(String line) {
    try {
      return MAPPER.readTree(line);
    } catch (IOException e) {
      throw new UncheckedIOException("not JSON: " + line, e);
    }
  }
}
