package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis stopped in the middle of a blast and started again, under each {@code
 * cap.redis.failure-mode}: the first part of the blast is decided with Redis up, the second while
 * it is down, the third after it is back (with the data it saved); and Redis too slow for a batch's
 * time budget.
 */
class FailureModeIT {
  private static final int FIRST = 2_000;
  private static final int SECOND = 2_000;
  private static final int THIRD = 1_000;
  private static final int SLOW_FIRST = 1_000;
  private static final int SLOW_SECOND = 3_000;

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  /**
   * What one run saw: the input, every output, the outputs decided while Redis was down, and the
   * sends produced after the limiter had decided a send again.
   */
  private record Run(
      List<ProducerRecord<byte[], byte[]>> input,
      List<CapScenario.Outcome> all,
      List<CapScenario.Outcome> whileDown,
      List<ProducerRecord<byte[], byte[]>> afterRecovery) {}

  private Run blastThroughAnOutage(String mode) {
    String in = "sends-" + mode;
    kafka.createTopics(4, in, "deliveries-" + mode, "suppressed-" + mode, "dlq-" + mode);
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records(in, FIRST + SECOND + THIRD, 300, 0, 0, mode.hashCode());
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties p =
          CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "app-" + mode);
      p.setProperty("topic.input", in);
      p.setProperty("cap.redis.failure-mode", mode);
      p.setProperty("cap.redis.timeout.ms", "1000");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-" + mode));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(),
                  "deliveries-" + mode,
                  "suppressed-" + mode,
                  "dlq-" + mode)) {
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, FIRST));
        reader.awaitRecords(FIRST, Duration.ofMinutes(1));

        redis.stopKeepingData();
        CapScenario.produce(kafka.bootstrapServers(), input.subList(FIRST, FIRST + SECOND));
        int decidedWhileDown =
            mode.equals("block")
                ? heldWhileDown(app, reader)
                : reader.awaitRecords(FIRST + SECOND, Duration.ofMinutes(1)).size();
        redis.restart();

        int next = awaitRecovery(reader, input, FIRST + SECOND, mode);
        CapScenario.produce(kafka.bootstrapServers(), input.subList(next, input.size()));
        List<CapScenario.Outcome> all =
            scenario.outcomes(
                reader.awaitRecords(input.size(), Duration.ofMinutes(2)),
                "deliveries-" + mode,
                "suppressed-" + mode);
        return new Run(
            input, all, all.subList(FIRST, decidedWhileDown), input.subList(next, input.size()));
      }
    }
  }

  /**
   * The number of outputs committed while Redis is down under {@code block}, checked not to grow:
   * counted once the application reports the outage and every output it counted is committed, and
   * again after thirty more rounds of its stream thread's loop.
   *
   * <p>That nothing is decided while Redis is down can only be seen over an interval. It starts at
   * the application's report of the outage and is measured in rounds of the stream thread's loop,
   * so that a slower machine gives the application as many chances to decide as a fast one.
   */
  private static int heldWhileDown(SendcapApp app, TopicReader reader) {
    TopicReader.await(
        "the limiter gauge to show the outage", Duration.ofMinutes(1), () -> unavailable(app));
    int atOutage =
        AppProgress.awaitOutputsCommitted(app.metrics(), reader, Duration.ofMinutes(1)).size();
    AppProgress.awaitStreamThreadRounds(app.metrics(), 30, Duration.ofMinutes(1));
    int after =
        AppProgress.awaitOutputsCommitted(app.metrics(), reader, Duration.ofMinutes(1)).size();
    assertThat(unavailable(app)).as("the outage, still reported").isTrue();
    assertThat(after)
        .as("outputs after the application ran on with Redis down")
        .isEqualTo(atOutage);
    return after;
  }

  private static boolean unavailable(SendcapApp app) {
    return app.metrics().get("sendcap.limiter.unavailable").gauge().value() == 1.0;
  }

  /**
   * Produces the third part a few sends at a time until the limiter decides one again (it
   * reconnects on its own, with backoff); returns the index of the first send not yet produced.
   */
  private int awaitRecovery(
      TopicReader reader, List<ProducerRecord<byte[], byte[]>> input, int from, String mode) {
    int next = from;
    while (next < input.size()) {
      int end = Math.min(input.size(), next + 20);
      CapScenario.produce(kafka.bootstrapServers(), input.subList(next, end));
      List<CapScenario.Outcome> outs =
          scenario.outcomes(
              reader.awaitRecords(end, Duration.ofMinutes(1)).subList(next, end),
              "deliveries-" + mode,
              "suppressed-" + mode);
      next = end;
      if (outs.stream().anyMatch(FailureModeIT::decidedByTheLimiter)) {
        return next;
      }
    }
    throw new AssertionError("the limiter decided no send of the third part");
  }

  private static boolean decidedByTheLimiter(CapScenario.Outcome o) {
    if (o.detail() instanceof Delivery d) {
      return !d.getFailOpen() && !d.getSend().getTransactional();
    }
    return o.detail() instanceof Suppression s
        && s.getReason() != SuppressionReason.LIMITER_UNAVAILABLE;
  }

  private Set<String> idsOf(List<ProducerRecord<byte[], byte[]>> records) {
    return scenario.sendsOf(records).stream()
        .filter(s -> !s.getTransactional())
        .map(ScheduledSend::getMessageId)
        .collect(Collectors.toSet());
  }

  @Test
  void blockDecidesNothingWhileRedisIsDownLosesNothingAndDecidesEverySendAsTheRulesSay() {
    Run run = blastThroughAnOutage("block");

    assertThat(run.whileDown()).as("outputs while Redis was down").isEmpty();
    assertThat(run.all())
        .as("no send decided without the limiter")
        .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen())
        .noneMatch(
            o ->
                o.detail() instanceof Suppression s
                    && s.getReason() == SuppressionReason.LIMITER_UNAVAILABLE);
    scenario.assertEachInputOnce(run.input(), run.all());
    scenario.assertDecisionsMatchTheModel(
        scenario.sendsOf(run.input()), run.all(), Duration.ofDays(1));
    scenario.assertNoWindowHoldsMoreThanItsCap(run.all());
  }

  @Test
  void allowDeliversUncheckedSendsMarkedFailOpenWhileRedisIsDown() {
    Run run = blastThroughAnOutage("allow");

    scenario.assertEachInputOnce(run.input(), run.all());
    Set<String> second = idsOf(run.input().subList(FIRST, FIRST + SECOND));
    assertThat(run.whileDown())
        .filteredOn(o -> second.contains(o.messageId()))
        .isNotEmpty()
        .allSatisfy(o -> assertThat(((Delivery) o.detail()).getFailOpen()).isTrue());
    assertThat(run.all())
        .filteredOn(o -> idsOf(run.afterRecovery()).contains(o.messageId()))
        .as("decided by the limiter again once Redis is back")
        .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen())
        .anyMatch(o -> o.detail() instanceof Suppression);
  }

  @Test
  void suppressSuppressesWithLimiterUnavailableWhileRedisIsDown() {
    Run run = blastThroughAnOutage("suppress");

    scenario.assertEachInputOnce(run.input(), run.all());
    Set<String> second = idsOf(run.input().subList(FIRST, FIRST + SECOND));
    assertThat(run.whileDown())
        .filteredOn(o -> second.contains(o.messageId()))
        .isNotEmpty()
        .allSatisfy(
            o -> {
              Suppression s = (Suppression) o.detail();
              assertThat(s.getReason()).isEqualTo(SuppressionReason.LIMITER_UNAVAILABLE);
              assertThat(s.getNextEligibleAt()).isNull();
            });
    assertThat(run.all())
        .filteredOn(o -> idsOf(run.afterRecovery()).contains(o.messageId()))
        .noneMatch(
            o ->
                o.detail() instanceof Suppression s
                    && s.getReason() == SuppressionReason.LIMITER_UNAVAILABLE)
        .anyMatch(o -> o.detail() instanceof Delivery);
  }

  /**
   * Redis that answers too slowly for a batch's time budget, under exactly-once with a transaction
   * timeout of 3 s: each batch gives up after its {@code cap.redis.timeout.ms} of 1 s in all (block
   * mode holds its sends and retries them), so no transaction outlives its timeout, and every send
   * is decided once, as the rules say.
   */
  @Test
  void batchesThatOutlastTheirBudgetAreHeldAndTheTransactionsStillCommit() {
    kafka.createTopics(4, "sends-slow", "deliveries-slow", "suppressed-slow", "dlq-slow");
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("sends-slow", SLOW_FIRST + SLOW_SECOND, 300, 0, 0, 11);
    RedisClient client = null;
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "app-slow");
      p.setProperty("topic.input", "sends-slow");
      p.setProperty("topic.deliveries", "deliveries-slow");
      p.setProperty("topic.suppressed", "suppressed-slow");
      p.setProperty("topic.dlq", "dlq-slow");
      p.setProperty("cap.redis.timeout.ms", "1000");
      p.setProperty("producer.transaction.timeout.ms", "3000");
      client = RedisClient.create(redis.uri());
      try (StatefulRedisConnection<String, String> admin = client.connect();
          SendcapApp app = SendcapApp.start(CapScenario.config(p, "-slow"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(), "deliveries-slow", "suppressed-slow", "dlq-slow")) {
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, SLOW_FIRST));
        reader.awaitRecords(SLOW_FIRST, Duration.ofMinutes(1));

        CapScenario.produce(kafka.bootstrapServers(), input.subList(SLOW_FIRST, input.size()));
        for (int pause = 0; pause < 3; pause++) {
          admin.sync().clientPause(2_500); // answers come 2.5 s late: past every batch's budget
          admin.sync().ping(); // returns once the pause is over
        }
        List<CapScenario.Outcome> all =
            scenario.outcomes(
                reader.awaitRecords(input.size(), Duration.ofMinutes(2)),
                "deliveries-slow",
                "suppressed-slow");

        assertThat(app.metrics().get("sendcap.limiter.outages").counter().count())
            .as("batches that outlasted their budget")
            .isPositive();
        assertThat(app.metrics().find("sendcap.stream.threads.replaced").counters())
            .as("no stream thread failed (a transaction timing out fences its thread)")
            .allSatisfy(c -> assertThat(c.count()).isZero());
        scenario.assertEachInputOnce(input, all);
        scenario.assertSameSendsAllowedAsTheModel(scenario.sendsOf(input), all, Duration.ofDays(1));
        scenario.assertNoWindowHoldsMoreThanItsCap(all);
      }
    } finally {
      if (client != null) {
        client.shutdown();
      }
    }
  }
}
