package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.blast.KafkaTopics;
import io.sendcap.testing.Docker;
import io.sendcap.testing.TopicReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.Network;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.utility.DockerImageName;
import org.testcontainers.utility.MountableFile;

/**
 * sendcap's image as a platform engineer tests with it: Testcontainers starts a Kafka broker
 * ({@code org.testcontainers.kafka.KafkaContainer}), Redis and the image on a network of their own,
 * the test produces a blast from the host and reads the outputs back, and every decision is the
 * reference model's.
 */
class ContainerIT {
  private static final Duration RETENTION = Duration.ofDays(1);
  private static final Duration TIMEOUT = Duration.ofMinutes(3);
  private static final String INPUT = "campaign-sends";
  private final CapScenario scenario = new CapScenario();

  @Test
  void sendcapsImageDecidesABlastAsTheModelSays(@TempDir Path dir) throws Exception {
    Docker.Images images = Docker.images();
    CapScenario.writeFiles(dir);
    try (Network network = Network.newNetwork();
        KafkaContainer kafka =
            new KafkaContainer(
                    DockerImageName.parse(images.kafka()).asCompatibleSubstituteFor("apache/kafka"))
                .withNetwork(network)
                .withListener("kafka:19092");
        GenericContainer<?> redis =
            new GenericContainer<>(images.redis())
                .withNetwork(network)
                .withNetworkAliases("redis")
                .withExposedPorts(6379)) {
      kafka.start();
      redis.start();
      String bootstrap = kafka.getBootstrapServers();
      KafkaTopics.create(bootstrap, 3, List.of(INPUT, "deliveries", "suppressed", "dlq"));
      CapScenario.publishSegments(bootstrap);

      try (GenericContainer<?> sendcap =
          new GenericContainer<>(images.sendcap())
              .withNetwork(network)
              // The image's config/sendcap.properties, with the settings of this network and of
              // CapScenario's blast given as an operator gives them: SENDCAP_SET.
              .withEnv(
                  "SENDCAP_SET",
                  String.join(
                      " ",
                      "bootstrap.servers=kafka:19092",
                      "cap.redis.uri=redis://redis:6379",
                      "application.id=container-it",
                      "topic.dlq=dlq",
                      "cap.clock=event",
                      "policies.file=/opt/sendcap/config/policies.yaml"))
              .withCopyFileToContainer(
                  MountableFile.forHostPath(dir.resolve("policies.yaml")),
                  "/opt/sendcap/config/policies.yaml")
              .withExposedPorts(8080)
              .waitingFor(Wait.forHttp("/health/ready").forStatusCode(200))
              .withStartupTimeout(TIMEOUT)) {
        sendcap.start();
        List<ProducerRecord<byte[], byte[]>> input =
            scenario.records(INPUT, 3_000, 300, 20, 40, 15);

        List<ConsumerRecord<byte[], byte[]>> out;
        try (TopicReader reader = new TopicReader(bootstrap, "deliveries", "suppressed", "dlq")) {
          CapScenario.produce(bootstrap, input);
          reader.awaitRecords(input.size(), TIMEOUT);
          out = reader.readToEndOnceNoTransactionIsOpen(TIMEOUT);
        }
        List<CapScenario.Outcome> outcomes = scenario.outcomes(out, "deliveries", "suppressed");

        scenario.assertEachInputOnce(input, outcomes);
        scenario.assertDecisionsMatchTheModel(scenario.sendsOf(input), outcomes, RETENTION);
        assertThat(outcomes).anyMatch(o -> !o.allowed() && !"DLQ".equals(o.detail()));
        assertThat(sendcap.getLogs()).contains("sendcap started").doesNotContain("ERROR");
      }
    }
  }
}
