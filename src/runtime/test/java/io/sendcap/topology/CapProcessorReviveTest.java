package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.QuotaCounters;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.Decoded;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.Test;

/**
 * Kafka Streams revives a corrupted or timed-out task on the same processor instance: it closes the
 * processor, wipes the task's state and restores it from the changelog up to the last commit, calls
 * {@code init} again and re-reads the input from the last committed offset. Every input must still
 * be decided once.
 */
class CapProcessorReviveTest {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");

  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final Undecided undecided = new Undecided(metrics);
  private final SlidingLogModel model = new SlidingLogModel(Duration.ZERO);
  private final CapProcessor processor = processor(() -> model);

  private CapProcessor processor(Supplier<CapStore> stores) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", "unused:9092");
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "2");
    p.setProperty("batch.max.wait.ms", "60000");
    SendcapConfig config = SendcapConfig.from(p, "test");
    LivePolicies policies =
        new LivePolicies(
            Policies.parse("default:\n  caps:\n    - {window: 1d, limit: 100}\n", "test"), "test");
    return new CapProcessor(
        config,
        policies,
        new SegmentRegistry(List.of()),
        stores,
        InstantSource.fixed(T0),
        new GlobalQuotas(
            new QuotaCounters(), "s", InstantSource.fixed(T0), Duration.ofSeconds(5), metrics),
        Backpressure.NONE,
        undecided,
        metrics,
        SendcapTopology.PENDING_STORE);
  }

  /** A task's context over an empty buffer: the state as restored from a changelog of nothing. */
  private static MockProcessorContext<byte[], OutputRecord> freshTask() {
    MockProcessorContext<byte[], OutputRecord> context = new MockProcessorContext<>();
    context.setCurrentSystemTimeMs(T0.toEpochMilli());
    KeyValueStore<Long, byte[]> buffer =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(SendcapTopology.PENDING_STORE),
                Serdes.Long(),
                Serdes.ByteArray())
            .withLoggingDisabled()
            .build();
    buffer.init(context.getStateStoreContext(), buffer);
    context.addStateStore(buffer);
    return context;
  }

  private static void process(
      CapProcessor processor, MockProcessorContext<byte[], OutputRecord> context, int offset) {
    ScheduledSend send =
        ScheduledSend.newBuilder()
            .setMessageId("m" + offset)
            .setCampaignId("c1")
            .setUserId(offset)
            .setChannel(Channel.EMAIL)
            .setScheduledAt(T0)
            .build();
    context.setRecordMetadata("campaign-sends", 0, offset);
    context.setCurrentStreamTimeMs(T0.toEpochMilli());
    processor.process(
        new Record<>(new byte[] {(byte) offset}, new Decoded<>(send, null), T0.toEpochMilli()));
  }

  private static List<String> decided(MockProcessorContext<byte[], OutputRecord> context) {
    List<String> ids = new ArrayList<>();
    for (var forwarded : context.forwarded()) {
      ids.add(((Delivery) forwarded.record().value().record()).getSend().getMessageId());
    }
    return ids;
  }

  @Test
  void aRevivedTaskDecidesWhatItReadsAgainOnceAndForgetsWhatItHeldBefore() {
    MockProcessorContext<byte[], OutputRecord> before = freshTask();
    processor.init(before);
    for (int offset = 0; offset <= 4; offset++) {
      process(processor, before, offset); // batches of two: each flush forwards the one before
    }
    assertThat(decided(before)).containsExactly("m0", "m1"); // 2 and 3 in flight, 4 pending

    // the task is corrupted before its commit: nothing of it was committed
    processor.close();
    MockProcessorContext<byte[], OutputRecord> after = freshTask();
    processor.init(after);
    for (int offset = 0; offset <= 4; offset++) {
      process(processor, after, offset);
    }
    long later = T0.plus(Duration.ofDays(1)).toEpochMilli();
    after.scheduledPunctuators().get(0).getPunctuator().punctuate(later); // flushes 4
    after.scheduledPunctuators().get(0).getPunctuator().punctuate(later); // forwards it

    assertThat(decided(after)).containsExactly("m0", "m1", "m2", "m3", "m4");
    assertThat(undecided.count()).as("sends read and not decided").isZero();
  }

  /**
   * Waiting for a batch can fail with something other than the limiter being unreachable (Kafka
   * Streams turns a timeout into a corrupted task): the batch is still in hand when the task
   * closes, and counted as undecided until then.
   */
  @Test
  void aBatchWhoseWaitFailsIsStillAccountedForWhenTheTaskCloses() {
    CapStore corrupts =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            return () -> {
              throw new TaskCorruptedException(Set.of(new TaskId(2, 0)));
            };
          }

          @Override
          public void close() {}
        };
    CapProcessor failing = processor(() -> corrupts);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    failing.init(context);
    process(failing, context, 0);
    process(failing, context, 1); // a batch of two: flushed, in flight
    process(failing, context, 2);
    assertThatThrownBy(() -> process(failing, context, 3))
        .isInstanceOf(TaskCorruptedException.class);
    assertThat(undecided.count()).isEqualTo(4);

    failing.close();

    assertThat(undecided.count()).as("sends read and not decided").isZero();
  }

  /**
   * A batch the limiter could not decide (block mode) goes back to the pending sends with its
   * chunks of the buffer, and they are deleted with the batch that decides it: once everything is
   * decided, the buffer holds nothing a restarted task would decide again.
   */
  @Test
  void aBatchDecidedAfterTheLimiterCameBackLeavesNothingInTheBuffer() {
    int[] calls = {0};
    CapStore flaky =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            if (calls[0]++ == 0) {
              return () -> {
                throw new LimiterUnavailableException("down", null);
              };
            }
            return model.submit(requests);
          }

          @Override
          public void close() {}
        };
    CapProcessor blocked = processor(() -> flaky);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    blocked.init(context);
    for (int offset = 0; offset <= 5; offset++) {
      process(blocked, context, offset);
    }
    long later = T0.plus(Duration.ofDays(1)).toEpochMilli();
    context.scheduledPunctuators().get(0).getPunctuator().punctuate(later);
    context.scheduledPunctuators().get(0).getPunctuator().punctuate(later);

    assertThat(decided(context)).containsExactlyInAnyOrder("m0", "m1", "m2", "m3", "m4", "m5");
    KeyValueStore<Long, byte[]> buffer = context.getStateStore(SendcapTopology.PENDING_STORE);
    try (var left = buffer.all()) {
      assertThat(left.hasNext()).as("entries left in the buffer").isFalse();
    }
  }
}
