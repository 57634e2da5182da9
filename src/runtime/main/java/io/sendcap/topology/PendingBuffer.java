package io.sendcap.topology;

import io.sendcap.avro.internal.PendingSend;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A task's changelogged buffer of undecided sends, in chunks: each entry of the store holds up to
 * {@value #CHUNK_SENDS} consecutive sends, keyed by the input offset of its first.
 *
 * <p>A send is in the store before {@code process()} returns: its chunk is written again with the
 * send appended. Chunks never span batches (taking the pending sends for a batch closes the chunk
 * being filled), so a batch deletes its chunks once its decisions are forwarded. One entry per send
 * cost a cache put, a cache delete and, at commit, a changelog record or two per send; a chunk
 * costs them once per {@value #CHUNK_SENDS} sends.
 *
 * <p>A chunk is a tag byte ({@code 0x01}), then per send its input offset (8 bytes), the length of
 * its {@link PendingSend} (4 bytes) and that record in Avro's single-object encoding. An entry that
 * starts with the single-object marker ({@code 0xC3}) is one {@link PendingSend} keyed by its own
 * offset, as earlier versions wrote the store: a changelog they left is restored all the same.
 */
final class PendingBuffer {
  /** The most sends one chunk holds. */
  static final int CHUNK_SENDS = 32;

  private static final byte CHUNK = 0x01;
  private static final byte SINGLE_OBJECT_MARKER = (byte) 0xC3;
  private static final SingleObjectAvroSerde<PendingSend> SERDE =
      new SingleObjectAvroSerde<>(PendingSend.class);

  private final KeyValueStore<Long, byte[]> store;
  private final List<Long> chunks = new ArrayList<>();
  private long open = -1;
  private int openSends;
  private byte[] openBytes = new byte[4096];
  private int openLength;

  PendingBuffer(KeyValueStore<Long, byte[]> store) {
    this.store = store;
  }

  /** Reads the sends the store holds (restored from its changelog), by input offset. */
  TreeMap<Long, PendingSend> restore() {
    TreeMap<Long, PendingSend> sends = new TreeMap<>();
    chunks.clear();
    open = -1;
    try (KeyValueIterator<Long, byte[]> all = store.all()) {
      all.forEachRemaining(
          kv -> {
            chunks.add(kv.key);
            read(kv.key, kv.value, sends);
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
          "an entry of the pending-sends buffer at offset "
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

  /**
   * Writes {@code send}, read at input {@code offset}, to the store; {@code body}, the Avro body of
   * its {@code ScheduledSend} as read from the input (or null), is copied rather than encoded
   * again.
   */
  void add(long offset, PendingSend send, byte[] body) {
    if (open < 0 || openSends == CHUNK_SENDS) {
      open = offset;
      openSends = 0;
      openLength = 0;
      append(new byte[] {CHUNK});
      chunks.add(offset);
    }
    byte[] bytes = SERDE.encode(send, send.getSend(), body);
    append(ByteBuffer.allocate(12).putLong(offset).putInt(bytes.length).array());
    append(bytes);
    openSends++;
    store.put(open, Arrays.copyOf(openBytes, openLength));
  }

  private void append(byte[] bytes) {
    if (openLength + bytes.length > openBytes.length) {
      openBytes =
          Arrays.copyOf(openBytes, Math.max(2 * openBytes.length, openLength + bytes.length));
    }
    System.arraycopy(bytes, 0, openBytes, openLength, bytes.length);
    openLength += bytes.length;
  }

  /**
   * The chunks of every send added since the last call, for a batch that takes all those sends; the
   * chunk being filled is closed.
   */
  List<Long> take() {
    List<Long> taken = List.copyOf(chunks);
    chunks.clear();
    open = -1;
    return taken;
  }

  /** Gives back the chunks of a batch that could not be decided: its sends are pending again. */
  void giveBack(List<Long> taken) {
    chunks.addAll(taken);
  }

  /** Deletes the chunks of a batch whose decisions have been forwarded. */
  void drop(List<Long> taken) {
    for (Long key : taken) {
      store.put(key, null); // a delete that does not read back the old value
    }
  }

  /** Forgets what it was filling; the store keeps what it holds (closing a task). */
  void reset() {
    chunks.clear();
    open = -1;
  }
}
