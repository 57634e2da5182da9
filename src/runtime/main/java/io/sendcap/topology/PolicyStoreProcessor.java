package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.PolicyRecords;
import java.nio.charset.StandardCharsets;
import java.util.List;
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
 * published later is installed as soon as it arrives. A record that cannot be installed is logged
 * and counted in {@code sendcap_policies_rejected_total} by reason ({@code key}: not the one key of
 * the topic; {@code no-value}: a tombstone; {@code invalid}: not valid policies; {@code error}:
 * anything else), and the version in use stays; the global thread, which every instance needs,
 * never fails for one record.
 */
final class PolicyStoreProcessor implements Processor<String, byte[], Void, Void> {
  private static final Logger LOG = LoggerFactory.getLogger(PolicyStoreProcessor.class);

  private final LivePolicies policies;
  private final String storeName;
  private final MeterRegistry metrics;
  private ProcessorContext<Void, Void> context;
  private KeyValueStore<String, byte[]> store;

  PolicyStoreProcessor(LivePolicies policies, String storeName, MeterRegistry metrics) {
    this.policies = policies;
    this.storeName = storeName;
    this.metrics = metrics;
    for (String reason : List.of("key", "no-value", "invalid", "error")) {
      rejected(reason);
    }
  }

  private Counter rejected(String reason) {
    return Counter.builder("sendcap.policies.rejected")
        .description("Records of the policies topic that were not installed, by reason")
        .tag("reason", reason)
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
      String reason = PolicyRecords.KEY.equals(record.key()) ? "no-value" : "key";
      rejected(reason).increment();
      LOG.warn(
          "policies topic: record at offset {} skipped ({}): key {}, {}; still using v{}",
          offset,
          reason,
          record.key(),
          record.value() == null ? "no value" : "not " + PolicyRecords.KEY,
          policies.current().version());
      return;
    }
    try {
      LivePolicies.Version version = PolicyRecords.read(offset, record.value(), source(record));
      store.put(record.key(), record.value());
      policies.install(version);
    } catch (InvalidConfigException e) {
      rejected("invalid").increment();
      LOG.error(
          "policies topic: record at offset {} skipped (invalid); still using v{}: {}",
          offset,
          policies.current().version(),
          String.join("; ", e.problems()));
    } catch (RuntimeException e) {
      rejected("error").increment();
      LOG.error(
          "policies topic: record at offset {} skipped (error); still using v{}",
          offset,
          policies.current().version(),
          e);
    }
  }

  /** The file a version was published from, if its record says. */
  private static String source(Record<String, byte[]> record) {
    Header source = record.headers().lastHeader(PolicyRecords.SOURCE_HEADER);
    return source == null || source.value() == null
        ? null
        : new String(source.value(), StandardCharsets.UTF_8);
  }
}
