package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.avro.specific.SpecificRecord;
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

  /** What a task restoring a copy of the store now would find. */
  private static TreeMap<Long, PendingSend> restoredCopy(KeyValueStore<Long, byte[]> store) {
    KeyValueStore<Long, byte[]> copy = store();
    try (var all = store.all()) {
      all.forEachRemaining(kv -> copy.put(kv.key, kv.value));
    }
    return new PendingBuffer(copy).restore();
  }

  @Test
  void everySendIsInTheStoreAsSoonAsItIsAdded() {
    KeyValueStore<Long, byte[]> store = store();
    PendingBuffer buffer = new PendingBuffer(store);
    Map<Long, PendingSend> added = new TreeMap<>();
    for (long offset = 100; offset < 100 + 2 * PendingBuffer.CHUNK_SENDS + 5; offset++) {
      buffer.add(offset, send(offset), null);
      added.put(offset, send(offset));
      assertThat(restoredCopy(store)).isEqualTo(added);
    }
    assertThat(store.approximateNumEntries()).isEqualTo(3);
  }

  @Test
  void aBatchDropsItsChunksOnlyAndAnUndecidedOneGivesThemBack() {
    KeyValueStore<Long, byte[]> store = store();
    PendingBuffer buffer = new PendingBuffer(store);
    for (long offset = 0; offset < 40; offset++) {
      buffer.add(offset, send(offset), null);
    }
    List<Long> first = buffer.take();
    assertThat(first).containsExactly(0L, 32L);
    for (long offset = 40; offset < 45; offset++) {
      buffer.add(offset, send(offset), null); // a new chunk: a batch's chunks hold its sends only
    }
    buffer.giveBack(first); // the limiter was unreachable: the first batch is pending again
    List<Long> second = buffer.take();
    assertThat(second).containsExactlyInAnyOrder(0L, 32L, 40L);
    buffer.add(45, send(45), null);
    buffer.drop(second);
    assertThat(restoredCopy(store)).containsOnlyKeys(45L);
  }

  @Test
  void entriesOfOneSendAsEarlierVersionsWroteThemAreRestoredBesideChunks() {
    KeyValueStore<Long, byte[]> store = store();
    try (SingleObjectAvroSerde<PendingSend> serde =
        new SingleObjectAvroSerde<>(PendingSend.class)) {
      store.put(7L, serde.encode(send(7)));
      store.put(8L, serde.encode(send(8)));
    }
    PendingBuffer buffer = new PendingBuffer(store);
    assertThat(buffer.restore()).containsOnlyKeys(7L, 8L).containsEntry(8L, send(8));
    buffer.add(9, send(9), null);
    List<Long> all = new ArrayList<>(buffer.take());
    assertThat(all).containsExactlyInAnyOrder(7L, 8L, 9L);
    buffer.drop(all);
    assertThat(restoredCopy(store)).isEmpty();
  }
}
