package io.sendcap.testing;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.awaitility.Awaitility;

/**
 * A single-node KRaft Kafka cluster for integration tests, built with Kafka's own {@link
 * KafkaClusterTestKit}: one combined broker and controller on free ports, with internal topics of
 * one replica so that transactions (exactly-once) work. Record timestamps and retention are a
 * production broker's: a test that needs otherwise sets it on its own topics, and says why.
 */
public final class TestKafka implements AutoCloseable {
  private final KafkaClusterTestKit cluster;

  private TestKafka(KafkaClusterTestKit cluster) {
    this.cluster = cluster;
  }

  /**
   * Formats and starts the cluster, and returns once its broker is ready for clients.
   *
   * @throws IllegalStateException if the cluster does not start
   */
  public static TestKafka start() {
    KafkaClusterTestKit cluster = build();
    try {
      cluster.format();
      cluster.startup();
      cluster.waitForReadyBrokers();
      return new TestKafka(cluster);
    } catch (Exception e) {
      closeAfterFailure(cluster, e);
      throw failure("Could not start the Kafka test cluster", e);
    }
  }

  /** Returns the {@code bootstrap.servers} of the cluster's broker. */
  public String bootstrapServers() {
    return cluster.bootstrapServers();
  }

  /**
   * Creates topics of {@code partitions} partitions and one replica each, and returns once the
   * broker serves every partition: the controller answers the creation before the broker's metadata
   * has the topics, and a client that asks the broker meanwhile is told they do not exist.
   *
   * @throws IllegalStateException if a topic cannot be created, e.g. because it already exists, or
   *     the broker does not serve it within 30 s
   */
  public void createTopics(int partitions, String... names) {
    try (Admin admin = cluster.admin()) {
      admin
          .createTopics(
              Arrays.stream(names).map(name -> new NewTopic(name, partitions, (short) 1)).toList())
          .all()
          .get();
      Awaitility.await("the broker to serve topics " + Arrays.toString(names))
          .atMost(TOPICS_SERVED)
          .pollDelay(Duration.ZERO)
          .pollInterval(Duration.ofMillis(10))
          .pollInSameThread()
          .until(() -> served(admin, partitions, names));
    } catch (ExecutionException | InterruptedException e) {
      throw failure("Could not create topics " + Arrays.toString(names), e);
    }
  }

  private static final Duration TOPICS_SERVED = Duration.ofSeconds(30);

  /** Whether the broker's metadata has every partition of the topics, each with a leader. */
  private static boolean served(Admin admin, int partitions, String... names)
      throws InterruptedException {
    try {
      return admin.describeTopics(List.of(names)).allTopicNames().get().values().stream()
          .allMatch(
              t ->
                  t.partitions().size() == partitions
                      && t.partitions().stream().allMatch(p -> p.leader() != null));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        return false;
      }
      throw failure("Could not describe topics " + Arrays.toString(names), e);
    }
  }

  /** The sum of the offsets consumer group {@code groupId} has committed on {@code topic}. */
  public long committedOffsets(String groupId, String topic) {
    try (Admin admin = cluster.admin()) {
      return admin
          .listConsumerGroupOffsets(groupId)
          .partitionsToOffsetAndMetadata()
          .get()
          .entrySet()
          .stream()
          .filter(e -> e.getKey().topic().equals(topic) && e.getValue() != null)
          .mapToLong(e -> e.getValue().offset())
          .sum();
    } catch (ExecutionException | InterruptedException e) {
      throw failure("Could not read the offsets of group " + groupId, e);
    }
  }

  /** Stops the cluster and deletes its data. */
  @Override
  public void close() {
    try {
      cluster.close();
    } catch (Exception e) {
      throw failure("Could not stop the Kafka test cluster", e);
    }
  }

  private static KafkaClusterTestKit build() {
    TestKitNodes nodes =
        new TestKitNodes.Builder()
            .setCombined(true)
            .setNumBrokerNodes(1)
            .setNumControllerNodes(1)
            .build();
    try {
      return new KafkaClusterTestKit.Builder(nodes)
          .setConfigProp("offsets.topic.replication.factor", "1")
          .setConfigProp("offsets.topic.num.partitions", "1")
          .setConfigProp("transaction.state.log.replication.factor", "1")
          .setConfigProp("transaction.state.log.min.isr", "1")
          .setConfigProp("transaction.state.log.num.partitions", "1")
          .setConfigProp("group.initial.rebalance.delay.ms", "0")
          // Retention and timestamp checks are a production broker's defaults (7 days,
          // records at most an hour ahead); only the retention check runs every second instead
          // of every 5 minutes, so that records a test stamps too old are gone within the test,
          // as they would be soon on a real broker, rather than hidden by its short run.
          .setConfigProp("log.retention.check.interval.ms", "1000")
          .build();
    } catch (Exception e) {
      throw failure("Could not build the Kafka test cluster", e);
    }
  }

  private static void closeAfterFailure(KafkaClusterTestKit cluster, Exception cause) {
    try {
      cluster.close();
    } catch (Exception e) {
      cause.addSuppressed(e);
    }
  }

  private static IllegalStateException failure(String message, Exception cause) {
    if (cause instanceof InterruptedException) {
      Thread.currentThread().interrupt();
    }
    return new IllegalStateException(message, cause);
  }
}
