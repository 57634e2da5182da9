package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.segment.SegmentLoader;
import io.sendcap.segment.SegmentRegistry;
import java.util.EnumMap;
import java.util.Map;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds the {@code segments} topic into the instance's global store and its segment registry.
 *
 * <p>Kafka Streams runs it on the global thread, for every record of every partition, also while
 * restoring at start-up, so each instance reads every segment. Chunks wait in the store until their
 * manifest arrives; the assembled bitmap then lives in the registry and its chunks leave the store.
 * A record that cannot be applied is skipped and counted in {@code sendcap_segments_rejected_total}
 * by reason (see {@link SegmentLoader}); the global thread, which every instance needs, never fails
 * for one record.
 */
final class SegmentStoreProcessor implements Processor<String, byte[], Void, Void> {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentStoreProcessor.class);

  private final SegmentLoader loader;
  private final String storeName;
  private final Map<SegmentLoader.Reason, Counter> rejected =
      new EnumMap<>(SegmentLoader.Reason.class);
  private final Counter failed;
  private SegmentLoader.ChunkStore chunks;

  SegmentStoreProcessor(
      SegmentRegistry registry, long maxBytes, String storeName, MeterRegistry metrics) {
    for (SegmentLoader.Reason reason : SegmentLoader.Reason.values()) {
      rejected.put(reason, counter(metrics, reason.label()));
    }
    this.failed = counter(metrics, "error");
    this.loader = new SegmentLoader(registry, maxBytes, reason -> rejected.get(reason).increment());
    this.storeName = storeName;
  }

  private static Counter counter(MeterRegistry metrics, String reason) {
    return Counter.builder("sendcap.segments.rejected")
        .description("Records of the segments topic that were skipped, by reason")
        .tag("reason", reason)
        .register(metrics);
  }

  @Override
  public void init(ProcessorContext<Void, Void> context) {
    KeyValueStore<String, byte[]> store = context.getStateStore(storeName);
    chunks = SegmentLoader.ChunkStore.of(store::get, store::put, store::delete);
  }

  @Override
  public void process(Record<String, byte[]> record) {
    try {
      loader.onRecord(record.key(), record.value(), chunks);
    } catch (RuntimeException e) {
      // Not a bad record the loader knows of: a defect, logged in full; the segments in force stay.
      failed.increment();
      LOG.error("segments topic: record {} skipped (error)", record.key(), e);
    }
  }
}
