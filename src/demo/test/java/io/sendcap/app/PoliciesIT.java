package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.Cli;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.stream.LongStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Policies changed without a restart ({@code policies validate|publish|show} and a running
 * application switching to a published version), and shadow mode, on a real broker and Redis.
 */
class PoliciesIT {
  /**
   * 08:00 UTC today: the sends of a test stay in one UTC day (the global caps' windows), and are
   * stamped when produced, within cap.max-skew.ms (7 days) of it.
   */
  private static final Instant T0 =
      Instant.now().truncatedTo(ChronoUnit.DAYS).plus(Duration.ofHours(8));

  private static final int USERS = 10;
  private static final String ONE_A_DAY =
      """
      segments: []
      default:
        caps:
          - {window: 1d, limit: 1}
      """;
  private static final String VIPS_THREE_A_DAY =
      """
      segments:
        - name: vip
          caps:
            - {window: 1d, limit: 3}
      default:
        caps:
          - {window: 1d, limit: 1}
      """;

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);

  @BeforeAll
  static void start() {
    kafka = TestKafka.start();
    kafka.createTopics(2, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  private static String[] args(String... more) {
    List<String> all = new ArrayList<>(List.of(more));
    all.addAll(
        List.of(
            "--config",
            "config/sendcap.properties",
            "--set",
            "bootstrap.servers=" + kafka.bootstrapServers()));
    return all.toArray(String[]::new);
  }

  @Test
  void validateReportsEveryProblemAtOnceWithoutABroker() throws IOException {
    Path bad = dir.resolve("bad.yaml");
    Files.writeString(
        bad,
        """
        segments:
          - name: VIP
            caps: [{window: 2x, limit: 0}]
        default:
          caps: [{window: 1d, limit: 2}]
        """);

    Cli.Result good = Cli.run("policies", "validate", "config/policies.yaml");
    Cli.Result invalid = Cli.run("policies", "validate", bad.toString());

    assertThat(good.exit()).isZero();
    assertThat(good.out()).contains("config/policies.yaml: valid", "1. new-users", "default");
    assertThat(invalid.exit()).isEqualTo(1);
    assertThat(invalid.err())
        .contains(
            "segments[0].name=\"VIP\" is invalid",
            "segments[0].caps[0].window=\"2x\" is invalid",
            "segments[0].caps[0].limit=\"0\" is invalid")
        .doesNotContain("Exception");
  }

  @Test
  void publishRefusesSegmentsNotOnTheTopicAndAnUnreachableBroker() throws IOException {
    Path ghosts = dir.resolve("ghosts.yaml");
    Files.writeString(
        ghosts,
        """
        segments:
          - name: ghosts
            caps: [{window: 1d, limit: 1}]
        default:
          caps: [{window: 1d, limit: 2}]
        """);

    Cli.Result missing = Cli.run(args("policies", "publish", ghosts.toString()));
    Cli.Result unreachable =
        Cli.run(
            "policies",
            "publish",
            "config/policies.yaml",
            "--set",
            "bootstrap.servers=127.0.0.1:1");

    assertThat(missing.exit()).isEqualTo(1);
    assertThat(missing.err())
        .contains("names segment(s) [ghosts] that are not on topic segments")
        .contains("nothing was published");
    assertThat(unreachable.exit()).isEqualTo(2);
    assertThat(unreachable.err().strip())
        .startsWith("sendcap: cannot reach Kafka at 127.0.0.1:1")
        .doesNotContain("Exception")
        .hasLineCount(1);
  }

  /**
   * One send a day per user under the file's policies; then a version that puts users 1 to 10 in
   * segment vip with three a day is published while the application runs, and their later sends are
   * decided by it.
   */
  @Test
  void aPolicyPublishedDuringARunDecidesTheSendsThatFollowWithoutARestart() throws Exception {
    Path file = dir.resolve("one-a-day.yaml");
    Files.writeString(file, ONE_A_DAY);
    Path vips = dir.resolve("vips.yaml");
    Files.writeString(vips, VIPS_THREE_A_DAY);
    Properties settings = CapScenario.settings(dir, kafka.bootstrapServers(), "unused", "hot");
    settings.setProperty("policies.file", file.toString());
    settings.setProperty("topic.policies", "policies-hot");

    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader =
            new TopicReader(kafka.bootstrapServers(), "deliveries", "suppressed")) {
      settings.setProperty("cap.redis.uri", redis.uri());
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, ""))) {
        produce(0, 1); // allowed: the first of the day
        produce(1, 2); // suppressed: one a day
        List<ConsumerRecord<byte[], byte[]>> before =
            reader.awaitRecords(2 * USERS, Duration.ofMinutes(1));
        assertThat(allowed(before)).hasSize(USERS);
        assertThat(suppressed(before))
            .hasSize(USERS)
            .allSatisfy(s -> assertThat(s.getCapLimit()).isEqualTo(1));

        Cli.Result published =
            Cli.run(
                args(
                    "policies",
                    "publish",
                    vips.toString(),
                    "--set",
                    "topic.policies=policies-hot"));
        assertThat(published.exit()).as(published.err()).isZero();
        assertThat(published.out()).contains("as version 1 on topic policies-hot");
        TopicReader.await(
            "the application to use version 1",
            Duration.ofMinutes(1),
            () -> app.metrics().get("sendcap.policies.version").gauge().value() == 1.0);

        produce(2, 3); // allowed: vip, the second of three
        produce(3, 4); // allowed: the third
        produce(4, 5); // suppressed: vip's cap
        List<ConsumerRecord<byte[], byte[]>> after =
            reader.awaitRecords(5 * USERS, Duration.ofMinutes(1)).subList(2 * USERS, 5 * USERS);
        assertThat(allowed(after))
            .hasSize(2 * USERS)
            .allSatisfy(d -> assertThat(d.getSegment()).isEqualTo("vip"));
        assertThat(suppressed(after))
            .hasSize(USERS)
            .allSatisfy(
                s -> {
                  assertThat(s.getSegment()).isEqualTo("vip");
                  assertThat(s.getCapLimit()).isEqualTo(3);
                  assertThat(s.getSend().getMessageId()).startsWith("m4-");
                });
      }

      Cli.Result shown = Cli.run(args("policies", "show", "--set", "topic.policies=policies-hot"));
      assertThat(shown.out())
          .contains("version 1 on topic policies-hot", "from " + vips, "limit: 3");
    }
  }

  @Test
  void inShadowModeEverySendIsDeliveredAndWouldBeCappedOnesAreReportedAsShadow() throws Exception {
    Path file = dir.resolve("shadow.yaml");
    Files.writeString(file, ONE_A_DAY);
    kafka.createTopics(2, "campaign-sends-shadow", "deliveries-shadow", "suppressed-shadow");
    Properties settings = CapScenario.settings(dir, kafka.bootstrapServers(), "unused", "shadow");
    settings.setProperty("policies.file", file.toString());
    settings.setProperty("cap.mode", "shadow");
    settings.setProperty("topic.input", "campaign-sends-shadow");
    settings.setProperty("topic.deliveries", "deliveries-shadow");
    settings.setProperty("topic.suppressed", "suppressed-shadow");
    settings.setProperty("topic.policies", "policies-shadow");

    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader =
            new TopicReader(kafka.bootstrapServers(), "deliveries-shadow", "suppressed-shadow")) {
      settings.setProperty("cap.redis.uri", redis.uri());
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, ""))) {
        produce("campaign-sends-shadow", 0, 3);
        reader.awaitRecords(3 * USERS + 2 * USERS, Duration.ofMinutes(1));
      }
      // The application has stopped: its outputs are all there will ever be.
      List<ConsumerRecord<byte[], byte[]>> out =
          reader.readToEndOnceNoTransactionIsOpen(Duration.ofMinutes(1));

      assertThat(allowed(out)).hasSize(3 * USERS);
      assertThat(suppressed(out))
          .hasSize(2 * USERS)
          .allSatisfy(
              s -> {
                assertThat(s.getShadow()).isTrue();
                assertThat(s.getSend().getMessageId()).matches("m[12]-.*");
              });
    }
  }

  /**
   * Two instances share one Redis and a global budget of 500 sends a day; a blast of 2,000 sends to
   * 2,000 users, each within their own caps, is delivered up to the budget and no further.
   */
  @Test
  void aGlobalCapHoldsAcrossTwoInstances() throws Exception {
    Path file = dir.resolve("budget.yaml");
    Files.writeString(
        file,
        """
        segments: []
        default:
          caps:
            - {window: 1d, limit: 5}
        global:
          - {name: budget, window: 1d, limit: 500, max-batch: 10}
        """);
    kafka.createTopics(4, "campaign-sends-budget", "deliveries-budget", "suppressed-budget");
    Properties settings = CapScenario.settings(dir, kafka.bootstrapServers(), "unused", "budget");
    settings.setProperty("policies.file", file.toString());
    settings.setProperty("topic.input", "campaign-sends-budget");
    settings.setProperty("topic.deliveries", "deliveries-budget");
    settings.setProperty("topic.suppressed", "suppressed-budget");
    settings.setProperty("topic.policies", "policies-budget");
    List<ProducerRecord<byte[], byte[]>> blast = new ArrayList<>();
    for (long user = 1; user <= 2_000; user++) {
      ScheduledSend send =
          ScheduledSend.newBuilder()
              .setMessageId("b-" + user)
              .setCampaignId("spring")
              .setUserId(user)
              .setChannel(Channel.EMAIL)
              .setScheduledAt(T0.plusSeconds(user))
              .build();
      blast.add(CapScenario.record("campaign-sends-budget", send, sends.encode(send)));
    }

    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader =
            new TopicReader(kafka.bootstrapServers(), "deliveries-budget", "suppressed-budget")) {
      settings.setProperty("cap.redis.uri", redis.uri());
      Properties second = new Properties();
      second.putAll(settings);
      second.setProperty("state.dir", dir.resolve("state-budget-2").toString());
      double calls;
      try (SendcapApp one = SendcapApp.start(CapScenario.config(settings, ""));
          SendcapApp two = SendcapApp.start(CapScenario.config(second, ""))) {
        // Both take part in the blast, and no rebalance is left in progress for their close.
        AppProgress.awaitGroupStable(
            kafka.bootstrapServers(), "budget", 2, "campaign-sends-budget", Duration.ofMinutes(1));
        CapScenario.produce(kafka.bootstrapServers(), blast);
        reader.awaitRecords(blast.size(), Duration.ofMinutes(2));
        calls =
            one.metrics()
                    .get("sendcap.global.redis.calls")
                    .tag("kind", "reserve")
                    .functionCounter()
                    .count()
                + two.metrics()
                    .get("sendcap.global.redis.calls")
                    .tag("kind", "reserve")
                    .functionCounter()
                    .count();
      }
      // Both instances have stopped: their outputs are all there will ever be.
      List<ConsumerRecord<byte[], byte[]>> out =
          reader.readToEndOnceNoTransactionIsOpen(Duration.ofMinutes(1));

      assertThat(out).hasSize(blast.size());
      List<Delivery> delivered = allowed(out);
      assertThat(delivered.size())
          .as("never beyond the budget; at most a batch per instance left unused")
          .isBetween(500 - 2 * 10, 500);
      assertThat(suppressed(out))
          .hasSize(blast.size() - delivered.size())
          .allSatisfy(
              s -> {
                assertThat(s.getReason()).isEqualTo(SuppressionReason.GLOBAL_CAP);
                assertThat(s.getGlobalCap()).isEqualTo("budget");
                assertThat(s.getNextEligibleAt())
                    .isEqualTo(T0.truncatedTo(ChronoUnit.DAYS).plus(Duration.ofDays(1)));
              });
      assertThat(calls).as("reservations, not one call per send").isLessThan(blast.size() / 4.0);
    }
  }

  /** Sends number {@code from} to {@code to - 1} of each user, one hour apart. */
  private void produce(int from, int to) {
    produce("campaign-sends", from, to);
  }

  private void produce(String topic, int from, int to) {
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    for (int n = from; n < to; n++) {
      for (long user : LongStream.rangeClosed(1, USERS).toArray()) {
        ScheduledSend send =
            ScheduledSend.newBuilder()
                .setMessageId("m" + n + "-" + user)
                .setCampaignId("c")
                .setUserId(user)
                .setChannel(Channel.EMAIL)
                .setScheduledAt(T0.plus(Duration.ofHours(n)))
                .build();
        records.add(CapScenario.record(topic, send, sends.encode(send)));
      }
    }
    CapScenario.produce(kafka.bootstrapServers(), records);
  }

  private List<Delivery> allowed(List<ConsumerRecord<byte[], byte[]>> records) {
    return records.stream()
        .filter(r -> r.topic().startsWith("deliveries"))
        .map(r -> deliveries.decode(r.value()))
        .toList();
  }

  private List<Suppression> suppressed(List<ConsumerRecord<byte[], byte[]>> records) {
    return records.stream()
        .filter(r -> r.topic().startsWith("suppressed"))
        .map(r -> suppressions.decode(r.value()))
        .toList();
  }
}
