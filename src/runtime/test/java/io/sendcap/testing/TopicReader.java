package io.sendcap.testing;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;

/** Reads committed records of topics from the beginning, for assertions on a pipeline's output. */
public final class TopicReader implements AutoCloseable {
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
  private final String bootstrapServers;

  /** Opens a reader of every partition of the given topics. */
  public TopicReader(String bootstrapServers, String... topics) {
    this.bootstrapServers = bootstrapServers;
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

  /**
   * Reads every record committed up to the end of the partitions as they are now, and returns all
   * read so far; fails after {@code timeout} with what was read.
   *
   * <p>The end is the partitions' last stable offset: for this {@code read_committed} reader,
   * {@code endOffsets} stops at the first transaction still open, so what a transaction still open
   * will commit is not read. Only once nothing more is produced is this all there will ever be (see
   * {@link #readToEndOnceNoTransactionIsOpen}).
   */
  public List<ConsumerRecord<byte[], byte[]>> readToEnd(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    Map<TopicPartition, Long> ends = consumer.endOffsets(consumer.assignment(), timeout);
    while (!reached(ends)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError(
            "read "
                + records.size()
                + " records within "
                + timeout
                + ", but not to the end offsets "
                + ends
                + " of "
                + positions());
      }
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    return List.copyOf(records);
  }

  /**
   * Waits until no transaction is open on the partitions (their last stable offset is their high
   * watermark), then reads every record to their end, and returns all read so far; fails if either
   * takes longer than {@code timeout}.
   *
   * <p>Once every producer of the topics has stopped, this is everything the topics will ever hold:
   * a transaction left open by a producer that was killed is aborted by the broker when it times
   * out, and until then it hides the records that follow it from {@link #readToEnd}.
   */
  public List<ConsumerRecord<byte[], byte[]>> readToEndOnceNoTransactionIsOpen(Duration timeout) {
    Set<TopicPartition> partitions = consumer.assignment();
    Map<TopicPartition, Long> stable = new HashMap<>();
    Map<TopicPartition, Long> high = new HashMap<>();
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
      await(
          "no transaction open on " + partitions,
          timeout,
          () -> {
            // The stable end first: it never passes the high watermark read after it.
            stable.clear();
            stable.putAll(consumer.endOffsets(partitions, timeout));
            high.clear();
            high.putAll(highWatermarks(admin, partitions));
            return stable.equals(high);
          });
    } catch (AssertionError e) {
      throw new AssertionError(
          e.getMessage() + ": last stable offsets " + stable + ", high watermarks " + high, e);
    }
    return readToEnd(timeout);
  }

  private static Map<TopicPartition, Long> highWatermarks(
      Admin admin, Set<TopicPartition> partitions) {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    partitions.forEach(p -> latest.put(p, OffsetSpec.latest()));
    try {
      Map<TopicPartition, Long> ends = new HashMap<>();
      admin
          .listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED))
          .all()
          .get()
          .forEach((p, info) -> ends.put(p, info.offset()));
      return ends;
    } catch (ExecutionException e) {
      throw new AssertionError("could not list the end offsets of " + partitions, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted listing the end offsets of " + partitions, e);
    }
  }

  private boolean reached(Map<TopicPartition, Long> ends) {
    return ends.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue());
  }

  private Map<TopicPartition, Long> positions() {
    Map<TopicPartition, Long> positions = new HashMap<>();
    consumer.assignment().forEach(p -> positions.put(p, consumer.position(p)));
    return positions;
  }

  /**
   * Waits until {@code condition} holds, checking it at once and then every 50 ms on this thread
   * (conditions read Kafka clients, which are not to be shared between threads), or fails after
   * {@code timeout} naming {@code what} it waited for.
   */
  public static void await(String what, Duration timeout, Supplier<Boolean> condition) {
    Awaitility.await(what)
        .atMost(timeout)
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(50))
        .pollInSameThread()
        .until(condition::get);
  }

  @Override
  public void close() {
    consumer.close();
  }
}
