package io.sendcap.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reads committed records of topics from the beginning, for assertions on a pipeline's output. */
public final class TopicReader implements AutoCloseable {
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();

  /** Opens a reader of every partition of the given topics. */
  public TopicReader(String bootstrapServers, String... topics) {
    consumer =
        new KafkaConsumer<>(
            Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                bootstrapServers,
                ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer());
    List<TopicPartition> partitions = new ArrayList<>();
    for (String topic : topics) {
      List<PartitionInfo> infos = consumer.partitionsFor(topic);
      if (infos.isEmpty()) {
        consumer.close();
        throw new IllegalStateException("topic " + topic + " has no partitions (yet)");
      }
      infos.forEach(p -> partitions.add(new TopicPartition(topic, p.partition())));
    }
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
  }

  /**
   * Polls until at least {@code count} records have been read in all, or fails after {@code
   * timeout} with what was read.
   */
  public List<ConsumerRecord<byte[], byte[]>> awaitRecords(int count, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (records.size() < count) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "read " + records.size() + " of " + count + " records within " + timeout);
      }
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    return List.copyOf(records);
  }

  /**
   * Polls until the records read so far satisfy {@code done}, or fails after {@code timeout} with
   * how many were read.
   */
  public List<ConsumerRecord<byte[], byte[]>> awaitUntil(
      String what, Duration timeout, Predicate<List<ConsumerRecord<byte[], byte[]>>> done) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!done.test(records)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "read " + records.size() + " records within " + timeout + ", but not " + what);
      }
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    return List.copyOf(records);
  }

  /** Polls for {@code quiet} more and returns everything read; for checking nothing extra came. */
  public List<ConsumerRecord<byte[], byte[]>> drain(Duration quiet) {
    long deadline = System.nanoTime() + quiet.toNanos();
    while (System.nanoTime() < deadline) {
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    return List.copyOf(records);
  }

  /** Waits until {@code condition} holds, polling every 50 ms, or fails after {@code timeout}. */
  public static void await(String what, Duration timeout, Supplier<Boolean> condition) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.get()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("timed out after " + timeout + " waiting for " + what);
      }
      try {
        Thread.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted waiting for " + what, e);
      }
    }
  }

  @Override
  public void close() {
    consumer.close();
  }
}
