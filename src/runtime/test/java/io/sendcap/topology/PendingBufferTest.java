package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

class PendingBufferTest {
  private static KeyValueStore<Long, byte[]> store() {
    MockProcessorContext<byte[], SpecificRecord> context = new MockProcessorContext<>();
    KeyValueStore<Long, byte[]> store =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore("pending-sends"), Serdes.Long(), Serdes.ByteArray())
            .withLoggingDisabled()
            .build();
    store.init(context.getStateStoreContext(), store);
    return store;
  }

  private static PendingSend send(long offset) {
    ScheduledSend send =
        ScheduledSend.newBuilder()
            .setMessageId("m" + offset)
            .setCampaignId("c")
            .setUserId(offset)
            .setChannel(Channel.PUSH)
            .setScheduledAt(Instant.ofEpochMilli(1_790_000_000_000L + offset))
            .build();
    return new PendingSend(null, offset, "s", send, List.of());
  }

  /** A chunk as the version before the mark wrote it: consecutive sends after a tag byte. */
  private static byte[] chunk(SingleObjectAvroSerde<PendingSend> serde, long... offsets) {
    ByteBuffer out = ByteBuffer.allocate(4096).put((byte) 0x01);
    for (long offset : offsets) {
      byte[] bytes = serde.encode(send(offset));
      out.putLong(offset).putInt(bytes.length).put(bytes);
    }
    return Arrays.copyOf(out.array(), out.position());
  }

  @Test
  void theMarkIsReadBackAsWrittenAndIsGoneOnceCleared() {
    KeyValueStore<Long, byte[]> store = store();
    PendingBuffer buffer = new PendingBuffer(store);
    assertThat(buffer.mark()).as("a task that never held a send").isNull();

    buffer.mark(new PendingBuffer.Mark(1_234_567, 1_790_000_000_123L));
    assertThat(new PendingBuffer(store).mark())
        .isEqualTo(new PendingBuffer.Mark(1_234_567, 1_790_000_000_123L));
    assertThat(store.approximateNumEntries()).isEqualTo(1);

    buffer.clearMark();
    assertThat(new PendingBuffer(store).mark()).isNull();
    assertThat(store.approximateNumEntries()).isZero();
  }

  @Test
  void sendsAnEarlierVersionKeptAreRestoredBesideTheMarkAndDroppedWithoutIt() {
    KeyValueStore<Long, byte[]> store = store();
    try (SingleObjectAvroSerde<PendingSend> serde =
        new SingleObjectAvroSerde<>(PendingSend.class)) {
      store.put(3L, serde.encode(send(3))); // one send per entry, as the first versions wrote
      store.put(4L, serde.encode(send(4)));
      store.put(5L, chunk(serde, 5, 6, 7)); // chunks, as the version before the mark wrote
      store.put(40L, chunk(serde, 40));
    }
    PendingBuffer buffer = new PendingBuffer(store);
    buffer.mark(new PendingBuffer.Mark(41, 0));

    TreeMap<Long, PendingSend> earlier = buffer.restoreEarlier();

    assertThat(earlier).containsOnlyKeys(3L, 4L, 5L, 6L, 7L, 40L).containsEntry(6L, send(6));
    buffer.dropEarlier();
    assertThat(new PendingBuffer(store).restoreEarlier()).isEmpty();
    assertThat(buffer.mark()).isEqualTo(new PendingBuffer.Mark(41, 0));
  }

  @Test
  void anEntryThatIsNeitherASendNorAChunkIsRefusedNamingItsOffset() {
    KeyValueStore<Long, byte[]> store = store();
    store.put(9L, new byte[] {0x7f});
    assertThatThrownBy(() -> new PendingBuffer(store).restoreEarlier())
        .isInstanceOf(SerializationException.class)
        .hasMessageContaining("at offset 9 is neither a chunk nor a send");
  }
}
