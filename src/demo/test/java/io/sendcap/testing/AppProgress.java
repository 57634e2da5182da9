package io.sendcap.testing;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Measurement;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * The progress of an application as Kafka's positions and its own meters show it, waited for by
 * tests that check that it decided nothing more than they expect.
 */
public final class AppProgress {
  private AppProgress() {}

  /**
   * Waits until consumer group {@code groupId} (an application id) has committed every partition of
   * {@code topic} up to its end offset, or fails after {@code timeout} with the offsets of both.
   *
   * <p>The end offsets are the last stable ones, the most the application reads under {@code
   * read_committed}; for input produced without transactions they are the end of the log. Once they
   * are reached, the application has read every record of the topic; under exactly-once, the
   * outputs it made until then are committed with those offsets. Sends it still holds undecided in
   * its buffer are not outputs yet: they commit as state, and are decided later.
   */
  public static void awaitInputCommitted(
      String bootstrapServers, String groupId, String topic, Duration timeout) {
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
      Map<TopicPartition, Long> committed = new HashMap<>();
      Map<TopicPartition, Long> ends = new HashMap<>();
      try {
        TopicReader.await(
            "group " + groupId + " to commit " + topic + " to its end",
            timeout,
            () -> {
              committed.clear();
              committed.putAll(committed(admin, groupId, topic));
              ends.clear();
              ends.putAll(ends(admin, topic));
              return ends.entrySet().stream()
                  .allMatch(e -> committed.getOrDefault(e.getKey(), 0L) >= e.getValue());
            });
      } catch (AssertionError e) {
        throw new AssertionError(
            e.getMessage() + ": committed " + committed + ", end offsets " + ends, e);
      }
    }
  }

  /**
   * Waits until consumer group {@code groupId} (an application id) is stable with {@code members}
   * members, each assigned partitions of {@code topic}, or fails after {@code timeout} with the
   * group as last described.
   *
   * <p>Then every instance takes part, and none of them is in a rebalance that an instance closing
   * would leave waiting for its session to time out.
   */
  public static void awaitGroupStable(
      String bootstrapServers, String groupId, int members, String topic, Duration timeout) {
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
      List<ConsumerGroupDescription> last = new ArrayList<>(List.of());
      try {
        TopicReader.await(
            "group " + groupId + " to be stable with " + members + " members reading " + topic,
            timeout,
            () -> {
              ConsumerGroupDescription group =
                  get(admin.describeConsumerGroups(List.of(groupId)).all()).get(groupId);
              last.clear();
              last.add(group);
              return group.groupState() == GroupState.STABLE
                  && group.members().size() == members
                  && group.members().stream()
                      .allMatch(
                          m ->
                              m.assignment().topicPartitions().stream()
                                  .anyMatch(p -> p.topic().equals(topic)));
            });
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + ": " + last, e);
      }
    }
  }

  private static Map<TopicPartition, Long> committed(Admin admin, String groupId, String topic) {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    Map<TopicPartition, OffsetAndMetadata> all =
        get(admin.listConsumerGroupOffsets(groupId).partitionsToOffsetAndMetadata());
    all.forEach(
        (p, o) -> {
          if (p.topic().equals(topic) && o != null) {
            offsets.put(p, o.offset());
          }
        });
    return offsets;
  }

  private static Map<TopicPartition, Long> ends(Admin admin, String topic) {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    get(admin.describeTopics(List.of(topic)).allTopicNames())
        .get(topic)
        .partitions()
        .forEach(p -> latest.put(new TopicPartition(topic, p.partition()), OffsetSpec.latest()));
    Map<TopicPartition, Long> ends = new HashMap<>();
    get(admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all())
        .forEach((p, info) -> ends.put(p, info.offset()));
    return ends;
  }

  private static <T> T get(KafkaFuture<T> future) {
    try {
      return future.get();
    } catch (ExecutionException e) {
      throw new AssertionError("an Admin request failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /**
   * The output records an application has counted as it sent them: its {@code
   * sendcap.sends.allowed}, {@code sendcap.sends.suppressed} and {@code sendcap.sends.dead.letters}
   * counters, summed.
   */
  public static long outputsCounted(MeterRegistry metrics) {
    double total = 0;
    for (String name :
        List.of(
            "sendcap.sends.allowed", "sendcap.sends.suppressed", "sendcap.sends.dead.letters")) {
      total += metrics.find(name).counters().stream().mapToDouble(Counter::count).sum();
    }
    return Math.round(total);
  }

  /**
   * Waits until every output record the application of {@code metrics} has counted is committed,
   * and returns what {@code reader} has read by then, or fails after {@code timeout}.
   *
   * <p>The reader must read the output topics of this application alone, from their beginning: it
   * is done when the records read to the end equal the outputs counted, the same before and after
   * the read. An output the application sends from then on is a decision it makes later.
   */
  public static List<ConsumerRecord<byte[], byte[]>> awaitOutputsCommitted(
      MeterRegistry metrics, TopicReader reader, Duration timeout) {
    List<List<ConsumerRecord<byte[], byte[]>>> read = new ArrayList<>(List.of(List.of()));
    long[] counted = new long[1];
    try {
      TopicReader.await(
          "every output counted to be committed",
          timeout,
          () -> {
            long before = outputsCounted(metrics);
            read.set(0, reader.readToEnd(timeout));
            counted[0] = outputsCounted(metrics);
            return before == counted[0] && read.get(0).size() == counted[0];
          });
    } catch (AssertionError e) {
      throw new AssertionError(
          e.getMessage()
              + ": the application counted "
              + counted[0]
              + " outputs, "
              + read.get(0).size()
              + " were committed",
          e);
    }
    return read.get(0);
  }

  /**
   * Waits until the stream threads of the application of {@code metrics} have polled Kafka {@code
   * rounds} more times between them (Kafka Streams' {@code poll-total}), or fails after {@code
   * timeout}; each round of a stream thread's loop is its chance to process and punctuate.
   */
  public static void awaitStreamThreadRounds(MeterRegistry metrics, int rounds, Duration timeout) {
    double start = streamThreadPolls(metrics);
    TopicReader.await(
        rounds + " more polls of the stream threads",
        timeout,
        () -> streamThreadPolls(metrics) >= start + rounds);
  }

  private static double streamThreadPolls(MeterRegistry metrics) {
    Collection<Meter> polls = metrics.find("kafka.stream.thread.poll.total").meters();
    if (polls.isEmpty()) {
      throw new AssertionError("no meter kafka.stream.thread.poll.total");
    }
    double total = 0;
    for (Meter m : polls) {
      for (Measurement measurement : m.measure()) {
        total += measurement.getValue();
      }
    }
    return total;
  }
}
