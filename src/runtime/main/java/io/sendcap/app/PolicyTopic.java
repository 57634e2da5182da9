package io.sendcap.app;

import io.sendcap.config.PolicyRecords;
import io.sendcap.config.SendcapConfig;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The policies topic ({@code topic.policies}): created compacted with one partition when missing,
 * written by {@code policies publish}, read back by {@code policies show}. The application reads it
 * through its global store.
 */
public final class PolicyTopic {
  private final Properties client;
  private final String topic;
  private final Duration timeout;

  /** A version on the topic. */
  public record Published(long version, String yaml, String source, Instant publishedAt) {}

  public PolicyTopic(SendcapConfig config, Duration timeout) {
    this.client = SendcapTopics.clientProperties(config);
    client.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    client.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    this.topic = config.topics().policies();
    this.timeout = timeout;
  }

  /**
   * Creates the topic if it does not exist; returns whether it did.
   *
   * @throws IllegalArgumentException if Kafka cannot be reached or refuses
   */
  public boolean ensureExists() {
    try (Admin admin = Admin.create(client)) {
      if (admin
          .listTopics()
          .names()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .contains(topic)) {
        return false;
      }
      NewTopic t =
          new NewTopic(topic, Optional.of(1), Optional.empty())
              .configs(
                  Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
      admin.createTopics(List.of(t)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      awaitPartition(admin);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof TopicExistsException) {
        return false;
      }
      String refusal = KafkaErrors.refusal(e);
      throw new IllegalArgumentException(
          refusal != null
              ? refusal
              : "cannot create topic " + topic + ": " + e.getCause().getMessage(),
          e);
    } catch (TimeoutException e) {
      throw unreachable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while creating topic " + topic, e);
    }
  }

  /**
   * Waits until the broker describes the new topic's partition: a consumer that asks a moment after
   * the creation may otherwise find no partition (a global store then fails to start).
   */
  private void awaitPartition(Admin admin)
      throws InterruptedException, ExecutionException, TimeoutException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        TopicDescription d =
            admin
                .describeTopics(List.of(topic))
                .allTopicNames()
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS)
                .get(topic);
        if (!d.partitions().isEmpty() && d.partitions().get(0).leader() != null) {
          return;
        }
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof UnknownTopicOrPartitionException)) {
          throw e;
        }
      }
      if (System.nanoTime() > deadline) {
        throw new TimeoutException("topic " + topic + " has no leader yet");
      }
      Thread.sleep(50);
    }
  }

  /** Publishes {@code yaml}, read from {@code source}; returns its version number. */
  public long publish(String yaml, String source) {
    ensureExists();
    Properties props = new Properties();
    props.putAll(client);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeout.toMillis());
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      ProducerRecord<String, byte[]> record =
          new ProducerRecord<>(topic, 0, PolicyRecords.KEY, yaml.getBytes(StandardCharsets.UTF_8));
      record.headers().add(PolicyRecords.SOURCE_HEADER, source.getBytes(StandardCharsets.UTF_8));
      RecordMetadata written = producer.send(record).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return PolicyRecords.version(written.offset());
    } catch (ExecutionException e) {
      throw new IllegalArgumentException(
          "publishing to " + topic + " failed: " + e.getCause().getMessage(), e);
    } catch (TimeoutException | org.apache.kafka.common.errors.TimeoutException e) {
      throw unreachable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while publishing to " + topic, e);
    }
  }

  /** The version in force: the newest on the topic; empty if none was published. */
  public Optional<Published> latest() {
    Properties props = new Properties();
    props.putAll(client);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      TopicPartition partition = new TopicPartition(topic, 0);
      consumer.assign(List.of(partition));
      consumer.seekToBeginning(List.of(partition));
      long end = consumer.endOffsets(List.of(partition), timeout).get(partition);
      Published newest = null;
      while (consumer.position(partition, timeout) < end) {
        for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          if (PolicyRecords.KEY.equals(r.key()) && r.value() != null) {
            Header source = r.headers().lastHeader(PolicyRecords.SOURCE_HEADER);
            newest =
                new Published(
                    PolicyRecords.version(r.offset()),
                    new String(r.value(), StandardCharsets.UTF_8),
                    source == null ? null : new String(source.value(), StandardCharsets.UTF_8),
                    Instant.ofEpochMilli(r.timestamp()));
          }
        }
      }
      return Optional.ofNullable(newest);
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
      throw unreachable(e);
    }
  }

  private IllegalArgumentException unreachable(Exception e) {
    return new IllegalArgumentException(
        "cannot reach Kafka at "
            + client.get("bootstrap.servers")
            + " within "
            + timeout.toSeconds()
            + " s (bootstrap.servers)",
        e);
  }
}
