package io.sendcap.topology;

import io.sendcap.segment.SegmentLoader;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Feeds the {@code segments} topic into the instance's global store and its segment registry.
 *
 * <p>Kafka Streams runs it on the global thread, for every record of every partition, also while
 * restoring at start-up, so each instance reads every segment. Chunks wait in the store until their
 * manifest arrives; the assembled bitmap then lives in the registry and its chunks leave the store.
 */
final class SegmentStoreProcessor implements Processor<String, byte[], Void, Void> {
  private final SegmentLoader loader;
  private final String storeName;
  private KeyValueStore<String, byte[]> store;
  private SegmentLoader.ChunkStore chunks;

  SegmentStoreProcessor(SegmentLoader loader, String storeName) {
    this.loader = loader;
    this.storeName = storeName;
  }

  @Override
  public void init(ProcessorContext<Void, Void> context) {
    store = context.getStateStore(storeName);
    chunks = SegmentLoader.ChunkStore.of(store::get, store::delete);
  }

  @Override
  public void process(Record<String, byte[]> record) {
    if (record.key() == null) {
      return;
    }
    if (record.value() == null) {
      store.delete(record.key());
    } else {
      store.put(record.key(), record.value());
    }
    loader.onRecord(record.key(), record.value(), chunks);
  }
}
