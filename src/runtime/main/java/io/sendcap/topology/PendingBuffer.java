package io.sendcap.topology;

import io.sendcap.avro.internal.PendingSend;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A task's changelogged store of where its undecided sends are: one entry, the task's {@link Mark}.
 *
 * <p>The sends themselves stay in the input topic. Every send the task has read from the mark's
 * offset on, and not sent to the dead-letter topic, is undecided; every send before it is decided.
 * Kafka Streams commits the store's changelog with the input offsets and the outputs, so after a
 * crash or a rebalance the task is restored with the mark of its last commit, and the sends between
 * the mark and the committed offset, processed but not decided then, are read again from the input
 * ({@link InputReplay}). Writing the mark once per batch costs a cache put, and at most one
 * changelog record per commit, where keeping each send cost an encoding, a put and a changelog
 * record with the send's bytes.
 *
 * <p>Earlier versions kept each undecided send in the store, keyed by input offset: entries of one
 * {@link PendingSend} in Avro's single-object encoding (first byte {@code 0xC3}), or chunks of
 * consecutive sends (a tag byte {@code 0x01}, then per send its input offset, 8 bytes, the length
 * of its encoding, 4 bytes, and that encoding). A changelog they left is still restored: its sends
 * are decided, then its entries deleted.
 */
final class PendingBuffer {
  /** The key of the mark: every key an earlier version wrote is an input offset, at least 0. */
  static final long MARK_KEY = -1L;

  private static final byte MARK = 0x02;
  private static final byte CHUNK = 0x01;
  private static final byte SINGLE_OBJECT_MARKER = (byte) 0xC3;
  private static final SingleObjectAvroSerde<PendingSend> SERDE =
      new SingleObjectAvroSerde<>(PendingSend.class);

  /**
   * Where a task's undecided sends start.
   *
   * @param from the input offset of the oldest undecided send
   * @param streamTime the task's stream time as {@link SendValidator} saw it when it processed that
   *     send (its own timestamp included): from there on, the stream time of each record read again
   *     is what it was when the record was first processed, which is what the checks saw
   */
  record Mark(long from, long streamTime) {}

  private final KeyValueStore<Long, byte[]> store;
  private final List<Long> earlierEntries = new ArrayList<>();

  PendingBuffer(KeyValueStore<Long, byte[]> store) {
    this.store = store;
  }

  /** The task's mark as restored, or null if it had no undecided send at its last commit. */
  Mark mark() {
    byte[] value = store.get(MARK_KEY);
    if (value == null) {
      return null;
    }
    if (value.length != 17 || value[0] != MARK) {
      throw new SerializationException(
          "the entry of the pending-sends store at key " + MARK_KEY + " is not a mark");
    }
    ByteBuffer in = ByteBuffer.wrap(value, 1, 16);
    return new Mark(in.getLong(), in.getLong());
  }

  /** Records the task's mark. */
  void mark(Mark mark) {
    store.put(
        MARK_KEY,
        ByteBuffer.allocate(17).put(MARK).putLong(mark.from()).putLong(mark.streamTime()).array());
  }

  /** Deletes the task's mark: every send it has read is decided. */
  void clearMark() {
    store.put(MARK_KEY, null); // a delete that does not read back the old value
  }

  /**
   * The sends an earlier version kept in the store (restored from its changelog), by input offset;
   * their entries stay until {@link #dropEarlier()}.
   */
  TreeMap<Long, PendingSend> restoreEarlier() {
    TreeMap<Long, PendingSend> sends = new TreeMap<>();
    earlierEntries.clear();
    try (KeyValueIterator<Long, byte[]> all = store.all()) {
      all.forEachRemaining(
          kv -> {
            if (kv.key != MARK_KEY) {
              earlierEntries.add(kv.key);
              read(kv.key, kv.value, sends);
            }
          });
    }
    return sends;
  }

  private static void read(long key, byte[] value, TreeMap<Long, PendingSend> into) {
    if (value.length > 0 && value[0] == SINGLE_OBJECT_MARKER) {
      into.put(key, SERDE.decode(value));
      return;
    }
    if (value.length == 0 || value[0] != CHUNK) {
      throw new SerializationException(
          "an entry of the pending-sends store at offset "
              + key
              + " is neither a chunk nor a send");
    }
    ByteBuffer in = ByteBuffer.wrap(value, 1, value.length - 1);
    while (in.hasRemaining()) {
      long offset = in.getLong();
      byte[] send = new byte[in.getInt()];
      in.get(send);
      into.put(offset, SERDE.decode(send));
    }
  }

  /** Deletes the entries of an earlier version, once all their sends are decided. */
  void dropEarlier() {
    for (Long key : earlierEntries) {
      store.put(key, null);
    }
    earlierEntries.clear();
  }
}
