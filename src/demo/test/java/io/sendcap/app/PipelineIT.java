package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A blast through the real pipeline: a KRaft broker, Redis and the application with exactly-once
 * processing, checked send by send against the reference model of the rules.
 */
class PipelineIT {
  private static final int SENDS = 10_000;
  private static final int USERS = 1_000;

  private static TestKafka kafka;
  private static EmbeddedRedis redis;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    kafka.createTopics(
        4,
        "campaign-sends",
        "deliveries",
        "suppressed",
        "campaign-sends-dlq",
        "deliveries-replay",
        "suppressed-replay",
        "dlq-replay",
        "days-event",
        "deliveries-days-event",
        "suppressed-days-event",
        "dlq-days-event",
        "days-wall",
        "deliveries-days-wall",
        "suppressed-days-wall",
        "dlq-days-wall");
    redis = EmbeddedRedis.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    redis.close();
    kafka.close();
  }

  private static java.util.Properties settings(String appId) {
    return CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), appId);
  }

  private static void scriptFlush() {
    RedisClient client = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      c.sync().scriptFlush();
    } finally {
      client.shutdown();
    }
  }

  @Test
  void everySendIsDecidedOnceAsTheRulesSayAndAReplayDecidesTheSameWithoutConsumingQuota() {
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("campaign-sends", SENDS, USERS, 50, 20, 7);
    long poison =
        scenario.idsOf(input).keySet().stream().filter(i -> i.startsWith("poison-")).count();
    assertThat(poison).isPositive();

    List<CapScenario.Outcome> first;
    try (TopicReader reader =
        new TopicReader(
            kafka.bootstrapServers(), "deliveries", "suppressed", "campaign-sends-dlq")) {
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings("sendcap-it"), ""))) {
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, SENDS / 2));
        reader.awaitRecords(SENDS / 2, Duration.ofMinutes(3));
        scriptFlush(); // as a restarted or failed-over Redis would have lost its scripts
        CapScenario.produce(kafka.bootstrapServers(), input.subList(SENDS / 2, SENDS));
        reader.awaitRecords(SENDS, Duration.ofMinutes(3));
        assertThat(app.state()).isEqualTo(KafkaStreams.State.RUNNING);
        assertThat(app.redis().scriptReloads())
            .as("NOSCRIPT answered by loading again")
            .isPositive();
      }
      // The application has stopped: its outputs are all there will ever be.
      first =
          scenario.outcomes(
              reader.readToEndOnceNoTransactionIsOpen(Duration.ofMinutes(1)),
              "deliveries",
              "suppressed");
    }

    scenario.assertEachInputOnce(input, first);
    assertThat(first.stream().filter(o -> "DLQ".equals(o.detail()))).hasSize((int) poison);
    Duration retention = CapScenario.config(settings("model"), "").limiter().idempotencyRetention();
    scenario.assertDecisionsMatchTheModel(scenario.sendsOf(input), first, retention);
    scenario.assertNoWindowHoldsMoreThanItsCap(first);

    long logged = CapScenario.loggedSends(redis.uri());
    try (SendcapApp replay =
            SendcapApp.start(CapScenario.config(settings("sendcap-it-replay"), "-replay"));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(), "deliveries-replay", "suppressed-replay", "dlq-replay")) {
      List<CapScenario.Outcome> second =
          scenario.outcomes(
              reader.awaitRecords(SENDS, Duration.ofMinutes(3)),
              "deliveries-replay",
              "suppressed-replay");
      assertThat(CapScenario.allowedById(second)).isEqualTo(CapScenario.allowedById(first));
      assertThat(replay.redis().calls()).as("the replay asked Redis again").isPositive();
    }
    assertThat(CapScenario.loggedSends(redis.uri()))
        .as("sends logged in Redis after the replay")
        .isEqualTo(logged);
  }

  /**
   * A campaign engine produces a schedule days ahead, all at once, each record stamped when it is
   * produced (the producer's default, and what a broker with production defaults accepts): under
   * the event clock every send is decided at its scheduledAt, exactly as the model of the rules
   * decides it, though the record timestamps say nothing of when the sends are due.
   */
  @Test
  void aBlastScheduledOverTheComingDaysStampedWhenProducedIsDecidedAtEachScheduledTime() {
    comingDays("event");
  }

  /** The same blast under the wall clock: each send decided at the time sendcap decides it. */
  @Test
  void aBlastScheduledOverTheComingDaysStampedWhenProducedIsDecidedAtTheTimeOfDeciding() {
    comingDays("wall");
  }

  private void comingDays(String clock) {
    String in = "days-" + clock;
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records(in, 6_000, 200, 0, 30, 13, Duration.ofDays(5));
    assertThat(input).allSatisfy(r -> assertThat(r.timestamp()).isNull());
    List<ScheduledSend> sends = scenario.sendsOf(input);
    assertThat(sends.get(sends.size() - 1).getScheduledAt())
        .as("the last send is due days after it is produced")
        .isAfter(Instant.now().plus(Duration.ofDays(4)));
    java.util.Properties settings = settings("sendcap-days-" + clock);
    settings.setProperty("cap.clock", clock);
    settings.setProperty("topic.input", in);
    // its own Redis keys: the other tests' sends to the same users are no part of this blast
    settings.setProperty("cap.redis.key-prefix", in);
    String suffix = "-days-" + clock;

    long before = System.currentTimeMillis();
    List<CapScenario.Outcome> outcomes;
    List<ConsumerRecord<byte[], byte[]>> records;
    try (TopicReader reader =
        new TopicReader(
            kafka.bootstrapServers(),
            "deliveries" + suffix,
            "suppressed" + suffix,
            "dlq" + suffix)) {
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, suffix))) {
        CapScenario.produce(kafka.bootstrapServers(), input);
        reader.awaitRecords(input.size(), Duration.ofMinutes(3));
      }
      records = reader.readToEndOnceNoTransactionIsOpen(Duration.ofMinutes(1));
    }
    long after = System.currentTimeMillis();
    outcomes = scenario.outcomes(records, "deliveries" + suffix, "suppressed" + suffix);

    scenario.assertEachInputOnce(input, outcomes);
    assertThat(outcomes).as("no dead letters").noneMatch(o -> "DLQ".equals(o.detail()));
    assertThat(records)
        .as("outputs carry their input's timestamp: when it was produced")
        .allSatisfy(r -> assertThat(r.timestamp()).isBetween(before, after));
    Duration retention = CapScenario.config(settings, suffix).limiter().idempotencyRetention();
    if (clock.equals("event")) {
      scenario.assertDecisionsMatchTheModel(sends, outcomes, retention);
    } else {
      scenario.assertDecisionsMatchTheModelAtTheirDecisionTimes(sends, outcomes, retention);
    }
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
    assertThat(outcomes).as("some sends capped").anyMatch(o -> !o.allowed());
  }
}
