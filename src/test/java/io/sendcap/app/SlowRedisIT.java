package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Redis that answers too slowly for a batch's time budget, under exactly-once with a transaction
 * timeout of 3 s: each batch gives up after its {@code cap.redis.timeout.ms} of 1 s in all (block
 * mode holds its sends and retries them), so no transaction outlives its timeout, and every send is
 * decided once, as the rules say.
 */
class SlowRedisIT {
  private static final int FIRST = 1_000;
  private static final int SECOND = 3_000;

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

  @Test
  void batchesThatOutlastTheirBudgetAreHeldAndTheTransactionsStillCommit() {
    kafka.createTopics(4, "sends-slow", "deliveries-slow", "suppressed-slow", "dlq-slow");
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("sends-slow", FIRST + SECOND, 300, 0, 0, 11);
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
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, FIRST));
        reader.awaitRecords(FIRST, Duration.ofMinutes(1));

        CapScenario.produce(kafka.bootstrapServers(), input.subList(FIRST, input.size()));
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
