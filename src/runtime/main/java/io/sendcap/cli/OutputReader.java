package io.sendcap.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A reader of every partition of some topics from the beginning, committed records only ({@code
 * read_committed}), as raw bytes.
 */
public final class OutputReader implements AutoCloseable {
  private final KafkaConsumer<byte[], byte[]> consumer;

  /** Opens a reader of {@code topics}, which must exist, positioned at their beginning. */
  public OutputReader(String bootstrapServers, List<String> topics) {
    this(bootstrapServers, topics, true);
  }

  /**
   * Opens a reader of {@code topics}, which must exist, positioned at their beginning or, if not
   * {@code fromBeginning}, at their end.
   */
  public OutputReader(String bootstrapServers, List<String> topics, boolean fromBeginning) {
    this(client(bootstrapServers), topics, fromBeginning);
  }

  /**
   * Opens a reader of {@code topics} with the given client settings (connection and security), as
   * the other constructor does.
   */
  public OutputReader(Properties client, List<String> topics, boolean fromBeginning) {
    Properties props = new Properties();
    props.putAll(client);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    this.consumer =
        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : topics) {
      consumer
          .partitionsFor(topic)
          .forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
    }
    consumer.assign(partitions);
    if (fromBeginning) {
      consumer.seekToBeginning(partitions);
    } else {
      consumer.seekToEnd(partitions);
    }
  }

  /**
   * The end offset of every partition read, now; under {@code read_committed} the last stable
   * offset, so a transaction still open is left out. Records below these offsets are a snapshot: a
   * read up to them ends.
   */
  public Map<TopicPartition, Long> endOffsets() {
    return consumer.endOffsets(consumer.assignment());
  }

  /** The offsets between this reader's position and {@code ends}, over every partition. */
  public long remaining(Map<TopicPartition, Long> ends) {
    long remaining = 0;
    for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
      remaining += Math.max(0, end.getValue() - consumer.position(end.getKey()));
    }
    return remaining;
  }

  private static Properties client(String bootstrapServers) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    return p;
  }

  /** Hands what arrives within {@code wait} to {@code each} and returns how many records it was. */
  public int poll(Duration wait, Consumer<ConsumerRecord<byte[], byte[]>> each) {
    ConsumerRecords<byte[], byte[]> records = consumer.poll(wait);
    records.forEach(each);
    return records.count();
  }

  @Override
  public void close() {
    consumer.close();
  }
}
