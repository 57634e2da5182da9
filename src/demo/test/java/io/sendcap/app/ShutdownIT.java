package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.ForkedSendcap;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sendcap run} stopped with SIGTERM decides the sends it holds before it exits. */
class ShutdownIT {
  private static final int SENDS = 2_000;

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    kafka.createTopics(2, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  @Test
  void sigtermDecidesTheBufferedSendsBeforeTheProcessExits() throws Exception {
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("campaign-sends", SENDS, 300, 0, 0, 11);
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(), "deliveries", "suppressed", "campaign-sends-dlq")) {
      Properties settings =
          CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "shutdown");
      // Batches that neither fill nor time out: only the shutdown can decide these sends.
      settings.setProperty("batch.max.records", "100000");
      settings.setProperty("batch.max.wait.ms", "600000");
      Path config = dir.resolve("shutdown.properties");
      try (Writer out = Files.newBufferedWriter(config)) {
        settings.store(out, "ShutdownIT");
      }
      ForkedSendcap app =
          ForkedSendcap.start(config, dir.resolve("shutdown.log"), Duration.ofMinutes(2));
      try {
        CapScenario.produce(kafka.bootstrapServers(), input);
        // The group has committed every send as read, held in the buffer: under exactly-once, an
        // output decided by then was committed with those offsets, so reading to the end finds it.
        // The log checked below tells that none was decided later either, up to the shutdown.
        AppProgress.awaitInputCommitted(
            kafka.bootstrapServers(), "shutdown", "campaign-sends", Duration.ofMinutes(1));
        assertThat(reader.readToEnd(Duration.ofSeconds(30))).as("nothing decided yet").isEmpty();
      } finally {
        app.close();
      }

      // The process has exited: its outputs are all there will ever be.
      List<ConsumerRecord<byte[], byte[]>> out =
          reader.readToEndOnceNoTransactionIsOpen(Duration.ofMinutes(1));
      scenario.assertEachInputOnce(input, scenario.outcomes(out, "deliveries", "suppressed"));
      assertThat(app.output())
          .contains("deciding the " + SENDS + " sends in hand", "sendcap stopped")
          .contains("Kafka Streams is REBALANCING: waiting for consumer group shutdown")
          .contains("Kafka Streams is RUNNING: deciding the sends of [campaign-sends-0")
          .doesNotContain("behind their task's mark");
    }
  }
}
