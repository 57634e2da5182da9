package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.serde.Decoded;
import java.util.function.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Headers;

/**
 * Reads a task's input partition again, from the mark of its oldest undecided send (see {@link
 * PendingBuffer}) up to the offset the task last committed: the records it processed then and whose
 * sends it had not decided.
 */
@FunctionalInterface
interface InputReplay {
  /**
   * Hands {@code each}, in offset order, every record of {@code partition} from offset {@code from}
   * up to (not including) the task's committed offset that Kafka Streams would hand the topology: a
   * record that cannot be read went to the dead-letter topic when it was first read, and one with a
   * negative timestamp was dropped, so neither is handed again. Nothing is read if the task has
   * committed no offset beyond {@code from}.
   *
   * @throws org.apache.kafka.streams.errors.StreamsException if the records cannot be read within
   *     {@code broker.timeout.ms}
   */
  void read(TopicPartition partition, long from, Consumer<Replayed> each);

  /** A record read again, as the topology read it the first time. */
  record Replayed(
      long offset, byte[] key, Decoded<ScheduledSend> value, long timestamp, Headers headers) {}
}
