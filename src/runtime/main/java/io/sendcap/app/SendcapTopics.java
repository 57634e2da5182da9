package io.sendcap.app;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/** What the hand tools know of sendcap's topics: which record each holds, and that they exist. */
public final class SendcapTopics {
  /** How long a tool waits for the broker before it says it cannot reach it. */
  private SendcapTopics() {}

  /** The Avro record of a topic's values; empty for the dead-letter topic (raw bytes). */
  public static Optional<Class<? extends SpecificRecord>> recordOf(
      SendcapConfig.Topics topics, String topic) {
    if (topic.equals(topics.input())) {
      return Optional.of(ScheduledSend.class);
    }
    if (topic.equals(topics.deliveries())) {
      return Optional.of(Delivery.class);
    }
    if (topic.equals(topics.suppressed())) {
      return Optional.of(Suppression.class);
    }
    if (topic.equals(topics.deadLetters())) {
      return Optional.empty();
    }
    throw new IllegalArgumentException(
        "topic "
            + topic
            + " is not one of sendcap's: "
            + topics.input()
            + ", "
            + topics.deliveries()
            + ", "
            + topics.suppressed()
            + ", "
            + topics.deadLetters());
  }

  /**
   * The settings of a plain Kafka client: the connection and security keys of the configuration,
   * without the Kafka Streams keys a client would log as unknown.
   */
  public static Properties clientProperties(SendcapConfig config) {
    Properties kafka = new Properties();
    Properties all = config.streams();
    for (String key : all.stringPropertyNames()) {
      if (key.startsWith("bootstrap.")
          || key.startsWith("security.")
          || key.startsWith("sasl.")
          || key.startsWith("ssl.")
          || key.equals("client.dns.lookup")) {
        kafka.setProperty(key, all.getProperty(key));
      }
    }
    return kafka;
  }

  /**
   * Checks that the broker answers and has {@code topic}.
   *
   * @throws IllegalArgumentException saying which is not the case
   */
  public static void requireTopic(SendcapConfig config, String topic) {
    Duration timeout = config.brokerTimeout();
    Properties props = clientProperties(config);
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    try (Admin admin = Admin.create(props)) {
      // Described by name: a topic the principal may not see is refused as such, where a listing
      // would leave it out as if it did not exist.
      admin
          .describeTopics(List.of(topic))
          .allTopicNames()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        throw new IllegalArgumentException(
            "topic " + topic + " does not exist on " + props.get("bootstrap.servers"), e);
      }
      throw unreachable(props, timeout, e);
    } catch (TimeoutException e) {
      throw unreachable(props, timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while asking Kafka for topic " + topic, e);
    }
  }

  private static IllegalArgumentException unreachable(
      Properties props, Duration timeout, Exception e) {
    String refusal = KafkaErrors.refusal(e);
    if (refusal != null) {
      return new IllegalArgumentException(refusal, e);
    }
    return new IllegalArgumentException(
        "cannot reach Kafka at "
            + props.get("bootstrap.servers")
            + " within "
            + timeout.toSeconds()
            + " s (bootstrap.servers)",
        e);
  }

  /**
   * The topics of {@code names} that the broker does not have.
   *
   * @throws IllegalArgumentException if the broker does not answer within {@code timeout}
   */
  public static List<String> missing(SendcapConfig config, List<String> names, Duration timeout) {
    Properties props = new Properties();
    props.putAll(config.streams());
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    try (Admin admin = Admin.create(props)) {
      Set<String> existing =
          admin.listTopics().names().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return names.stream().filter(n -> !existing.contains(n)).toList();
    } catch (ExecutionException | TimeoutException e) {
      throw unreachable(props, timeout, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while asking Kafka for topics " + names, e);
    }
  }
}
