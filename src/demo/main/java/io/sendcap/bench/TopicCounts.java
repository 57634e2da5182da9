package io.sendcap.bench;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * Counts of records read, by topic; nothing is decoded, so that counting costs every run the
 * benchmark times the same.
 */
final class TopicCounts implements Consumer<ConsumerRecord<byte[], byte[]>> {
  private final Map<String, Long> counts = new HashMap<>();

  @Override
  public void accept(ConsumerRecord<byte[], byte[]> record) {
    counts.merge(record.topic(), 1L, Long::sum);
  }

  /** The records read from {@code topic}. */
  long of(String topic) {
    return counts.getOrDefault(topic, 0L);
  }

  /** The records read from every topic. */
  long total() {
    return counts.values().stream().mapToLong(Long::longValue).sum();
  }
}
