package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.streams.KafkaStreams;

/**
 * The blast of the Redis failover tests: {@link #BEFORE} + {@link #AFTER} sends to {@link #USERS}
 * users produced at once, a Redis master failed over once {@link #BEFORE} are decided, and what
 * must hold whatever replication lost checked, in block mode: every input decided once, none while
 * there was no master (no fail-open delivery, no LIMITER_UNAVAILABLE), sendcap still running, its
 * script loaded on the promoted replica.
 */
final class FailoverBlast {
  static final int BEFORE = 2_000;
  static final int AFTER = 4_000;
  static final int USERS = 400;

  private final CapScenario scenario = new CapScenario();
  private final TestKafka kafka;
  private final Path dir;

  /**
   * A blast on {@code kafka}, with the files {@link CapScenario#writeFiles} wrote in {@code dir}.
   */
  FailoverBlast(TestKafka kafka, Path dir) {
    this.kafka = kafka;
    this.dir = dir;
  }

  /**
   * Runs the blast through sendcap on {@code redisUri}, waiting for {@code waitReplicas} replicas
   * after each batch, calls {@code failover} (kill the master, await its replica's promotion) once
   * {@link #BEFORE} sends are decided, checks the outputs and returns the users above a cap.
   *
   * @param name the suffix of the topics and of the application id
   * @param promotedHasScript whether the promoted replica has the script of this SHA-1 cached
   */
  Map<Long, String> run(
      String name,
      long seed,
      String redisUri,
      boolean cluster,
      int waitReplicas,
      Runnable failover,
      Predicate<String> promotedHasScript)
      throws Exception {
    String in = "sends-" + name;
    String deliveries = "deliveries-" + name;
    String suppressed = "suppressed-" + name;
    String dlq = "dlq-" + name;
    kafka.createTopics(4, in, deliveries, suppressed, dlq);
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records(in, BEFORE + AFTER, USERS, 20, 20, seed);
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redisUri, "app-" + name);
    p.setProperty("topic.input", in);
    p.setProperty("cap.redis.cluster", String.valueOf(cluster));
    p.setProperty("cap.redis.timeout.ms", "1000");
    p.setProperty("cap.redis.wait-replicas", String.valueOf(waitReplicas));
    p.setProperty("cap.redis.wait-timeout.ms", "500");
    try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-" + name));
        TopicReader reader =
            new TopicReader(kafka.bootstrapServers(), deliveries, suppressed, dlq)) {
      CapScenario.produce(kafka.bootstrapServers(), input);
      awaitDecided(app, BEFORE, Duration.ofMinutes(1));
      failover.run();

      List<CapScenario.Outcome> outcomes =
          scenario.outcomes(
              reader.awaitRecords(input.size(), Duration.ofMinutes(3)), deliveries, suppressed);
      scenario.assertEachInputOnce(input, outcomes);
      assertDecidedThroughTheFailover(app, outcomes, waitReplicas);
      assertThat(promotedHasScript.test(app.redis().sha()))
          .as("the script loaded on the promoted replica, which Redis does not replicate it to")
          .isTrue();
      return scenario.usersAboveACap(outcomes);
    }
  }

  /**
   * Waits until the application's limiter has decided {@code count} sends. Its own count rather
   * than the outputs: those become visible at commits, a second apart by default, by when the whole
   * blast may be decided and the failover would come after it rather than in its middle.
   */
  private static void awaitDecided(SendcapApp app, long count, Duration timeout) {
    await()
        .atMost(timeout)
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(1))
        .untilAsserted(
            () ->
                assertThat(app.redis().decisions())
                    .as("sends decided")
                    .isGreaterThanOrEqualTo(count));
  }

  /**
   * With {@code waitReplicas}, the batches on the promoted master, which has no replica, are
   * counted as shortfalls too.
   */
  private static void assertDecidedThroughTheFailover(
      SendcapApp app, List<CapScenario.Outcome> outcomes, int waitReplicas) {
    assertThat(outcomes)
        .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen())
        .noneMatch(
            o ->
                o.detail() instanceof Suppression s
                    && s.getReason() == SuppressionReason.LIMITER_UNAVAILABLE);
    assertThat(app.state()).isEqualTo(KafkaStreams.State.RUNNING);
    if (waitReplicas > 0) {
      assertThat(app.redis().waitShortfalls())
          .as("batches on the promoted master, which has no replica, counted")
          .isPositive();
    }
  }
}
