package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.PolicyRecords;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Feeds the policies topic into the instance's {@link LivePolicies}, on the global thread: at
 * start-up the newest published version is installed before any send is decided, and a version
 * published later is installed as soon as it arrives. A record that is not valid policy YAML is
 * logged and counted ({@code sendcap.policies.rejected}) and the version in use stays.
 */
final class PolicyStoreProcessor implements Processor<String, byte[], Void, Void> {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyStoreProcessor.class);

  private final LivePolicies policies;
  private final String storeName;
  private final Counter rejected;
  private ProcessorContext<Void, Void> context;
  private KeyValueStore<String, byte[]> store;

  PolicyStoreProcessor(LivePolicies policies, String storeName, MeterRegistry metrics) {
    this.policies = policies;
    this.storeName = storeName;
    this.rejected =
        Counter.builder("sendcap.policies.rejected")
            .description("Records of the policies topic that were not valid policies")
            .register(metrics);
  }

  @Override
  public void init(ProcessorContext<Void, Void> context) {
    this.context = context;
    this.store = context.getStateStore(storeName);
  }

  @Override
  public void process(Record<String, byte[]> record) {
    long offset = context.recordMetadata().map(RecordMetadata::offset).orElse(-1L);
    if (!PolicyRecords.KEY.equals(record.key()) || record.value() == null) {
      LOG.warn(
          "ignoring the record at offset {} of the policies topic: key {}, {}",
          offset,
          record.key(),
          record.value() == null ? "no value" : "not " + PolicyRecords.KEY);
      return;
    }
    Header source = record.headers().lastHeader(PolicyRecords.SOURCE_HEADER);
    try {
      LivePolicies.Version version =
          PolicyRecords.read(
              offset,
              record.value(),
              source == null ? null : new String(source.value(), StandardCharsets.UTF_8));
      store.put(record.key(), record.value());
      policies.install(version);
    } catch (InvalidConfigException e) {
      rejected.increment();
      LOG.error(
          "policies at offset {} of the policies topic are invalid; still using v{}: {}",
          offset,
          policies.current().version(),
          String.join("; ", e.problems()));
    }
  }
}
