package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.QuotaCounters;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.Decoded;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.topology.InputReplay.Replayed;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.errors.StreamsException;
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

  private static final InputReplay NO_REPLAY =
      (partition, from, each) -> {
        throw new AssertionError("a task restored from nothing read its input again");
      };

  private CapProcessor processor(Supplier<CapStore> stores) {
    return processor(stores, NO_REPLAY);
  }

  /**
   * A processor flushing batches of two sends, with one batch in flight at a time: most tests here
   * follow a task batch by batch.
   */
  private CapProcessor processor(Supplier<CapStore> stores, InputReplay replay) {
    return processor(stores, replay, 1);
  }

  private CapProcessor processor(Supplier<CapStore> stores, InputReplay replay, int inFlight) {
    return processor(stores, replay, inFlight, 2);
  }

  /**
   * A processor flushing batches of two sends, {@code inFlight} at a time with Redis, holding up to
   * {@code maxPending} sends while they are.
   */
  private CapProcessor processor(
      Supplier<CapStore> stores, InputReplay replay, int inFlight, int maxPending) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", "unused:9092");
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "2");
    p.setProperty("batch.max.wait.ms", "60000");
    p.setProperty("batch.max.in-flight", Integer.toString(inFlight));
    p.setProperty("batch.max.pending", Integer.toString(maxPending));
    SendcapConfig config = SendcapConfig.from(p, "test");
    LivePolicies policies =
        new LivePolicies(
            Policies.parse("default:\n  caps:\n    - {window: 1d, limit: 100}\n", "test"), "test");
    return new CapProcessor(
        config,
        policies,
        new SegmentRegistry(List.of()),
        stores,
        // the instance's clock: the day of the newest sends the tests process, which a send may lie
        // no more than cap.max-skew.ms ahead of
        InstantSource.fixed(T0.plus(Duration.ofDays(11))),
        new GlobalQuotas(
            new QuotaCounters(), "s", InstantSource.fixed(T0), Duration.ofSeconds(5), metrics),
        Backpressure.NONE,
        undecided,
        metrics,
        SendcapTopology.PENDING_STORE,
        replay);
  }

  /** A task's context over an empty buffer: the state as restored from a changelog of nothing. */
  private static MockProcessorContext<byte[], OutputRecord> freshTask() {
    return restoredTask(List.of());
  }

  /** A task's context over a buffer restored with {@code entries}, as its last commit left them. */
  private static MockProcessorContext<byte[], OutputRecord> restoredTask(
      List<KeyValue<Long, byte[]>> entries) {
    MockProcessorContext<byte[], OutputRecord> context = new MockProcessorContext<>();
    context.setCurrentSystemTimeMs(T0.toEpochMilli());
    context.setCurrentStreamTimeMs(-1); // Kafka Streams' stream time of a task with none committed
    KeyValueStore<Long, byte[]> buffer =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(SendcapTopology.PENDING_STORE),
                Serdes.Long(),
                Serdes.ByteArray())
            .withLoggingDisabled()
            .build();
    buffer.init(context.getStateStoreContext(), buffer);
    buffer.putAll(entries);
    context.addStateStore(buffer);
    return context;
  }

  /** What a task's buffer holds now, as its changelog would restore it after a commit now. */
  private static List<KeyValue<Long, byte[]>> committed(
      MockProcessorContext<byte[], OutputRecord> context) {
    KeyValueStore<Long, byte[]> buffer = context.getStateStore(SendcapTopology.PENDING_STORE);
    List<KeyValue<Long, byte[]>> entries = new ArrayList<>();
    try (var all = buffer.all()) {
      all.forEachRemaining(entries::add);
    }
    return entries;
  }

  /**
   * A task's input partition: what it processed, by offset, and the offset it committed, up to
   * which a restored task reads it again.
   */
  private static final class Input implements InputReplay {
    final TreeMap<Long, Replayed> records = new TreeMap<>();
    final List<Long> readFrom = new ArrayList<>();
    long committed;

    @Override
    public void read(TopicPartition partition, long from, Consumer<Replayed> each) {
      assertThat(partition).isEqualTo(new TopicPartition("campaign-sends", 0));
      readFrom.add(from);
      records.subMap(from, committed).values().forEach(each);
    }

    /**
     * Processes the send of {@code offset}, scheduled at (and stamped) {@code at}, with the stream
     * time Kafka Streams would give it: the newest timestamp of the partition, its own included.
     */
    void process(
        CapProcessor processor,
        MockProcessorContext<byte[], OutputRecord> context,
        int offset,
        Instant at) {
      ScheduledSend send = send(offset, at);
      records.put(
          (long) offset,
          new Replayed(
              offset,
              new byte[] {(byte) offset},
              new Decoded<>(send, null, 0),
              at.toEpochMilli(),
              new RecordHeaders()));
      long streamTime =
          records.headMap((long) offset, true).values().stream()
              .mapToLong(Replayed::timestamp)
              .max()
              .orElseThrow();
      context.setRecordMetadata("campaign-sends", 0, offset);
      context.setCurrentStreamTimeMs(streamTime);
      committed = offset + 1; // a commit may come after any record
      processor.process(
          new Record<>(
              new byte[] {(byte) offset}, new Decoded<>(send, null, 0), at.toEpochMilli()));
    }
  }

  private static ScheduledSend send(int offset, Instant at) {
    return ScheduledSend.newBuilder()
        .setMessageId("m" + offset)
        .setCampaignId("c1")
        .setUserId(offset)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(at)
        .build();
  }

  private static void process(
      CapProcessor processor, MockProcessorContext<byte[], OutputRecord> context, int offset) {
    ScheduledSend send = send(offset, T0);
    context.setRecordMetadata("campaign-sends", 0, offset);
    context.setCurrentStreamTimeMs(T0.toEpochMilli());
    processor.process(
        new Record<>(new byte[] {(byte) offset}, new Decoded<>(send, null, 0), T0.toEpochMilli()));
  }

  private static List<String> decided(MockProcessorContext<byte[], OutputRecord> context) {
    List<String> ids = new ArrayList<>();
    for (var forwarded : context.forwarded()) {
      ids.add(((Delivery) forwarded.record().value().record()).getSend().getMessageId());
    }
    return ids;
  }

  /**
   * A store whose answers arrive when the test says so: {@code answer(i)} delivers the decisions of
   * the i-th batch submitted (from 0); each batch's decisions are the model's, made when it was
   * submitted, as Redis decides in the order calls come. Records the batches waited for before
   * their answers had arrived.
   */
  private final class Answers implements CapStore {
    final List<AtomicBoolean> arrived = new ArrayList<>();
    final List<Integer> waitedFor = new ArrayList<>();
    final List<Long> timeFloors = new ArrayList<>(); // each batch's, as its first request has it
    final List<Integer> sizes = new ArrayList<>(); // each batch's number of sends
    int failFirst; // how many of the first batches the limiter fails to decide

    void answer(int batch) {
      arrived.get(batch).set(true);
    }

    @Override
    public Pending submit(List<CapRequest> requests) {
      int batch = arrived.size();
      timeFloors.add(requests.get(0).timeFloor());
      sizes.add(requests.size());
      AtomicBoolean answered = new AtomicBoolean();
      arrived.add(answered);
      Pending decided =
          batch < failFirst
              ? () -> {
                throw new LimiterUnavailableException("timed out", null);
              }
              : model.submit(requests);
      return new Pending() {
        @Override
        public List<Decision> await() {
          if (!answered.get()) {
            waitedFor.add(batch);
          }
          return decided.await();
        }

        @Override
        public boolean ready() {
          return answered.get();
        }
      };
    }

    @Override
    public void close() {}
  }

  private static void punctuate(MockProcessorContext<byte[], OutputRecord> context) {
    context.scheduledPunctuators().get(0).getPunctuator().punctuate(T0.toEpochMilli());
  }

  private static long markedFrom(MockProcessorContext<byte[], OutputRecord> context) {
    return new PendingBuffer(context.getStateStore(SendcapTopology.PENDING_STORE)).mark().from();
  }

  /**
   * With three batches in flight, a punctuation forwards those whose decisions have arrived, oldest
   * first, stops at the first still on its way without waiting for it, and the mark stays at the
   * oldest undecided send; a flush waits only when it finds three in flight, and for the oldest.
   */
  @Test
  void batchesInFlightAreForwardedInInputOrderOnceTheirDecisionsHaveArrived() {
    Answers redis = new Answers();
    CapProcessor pipelined = processor(() -> redis, NO_REPLAY, 3);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    pipelined.init(context);
    for (int offset = 0; offset <= 5; offset++) {
      process(pipelined, context, offset); // three batches of two, all in flight
    }
    assertThat(redis.arrived).hasSize(3);
    assertThat(decided(context)).isEmpty();

    redis.answer(1);
    punctuate(context);
    assertThat(decided(context)).as("the second batch, answered before the first").isEmpty();
    assertThat(markedFrom(context)).isZero();

    redis.answer(0);
    punctuate(context);
    assertThat(decided(context)).containsExactly("m0", "m1", "m2", "m3");
    assertThat(markedFrom(context)).isEqualTo(4);

    for (int offset = 6; offset <= 9; offset++) {
      process(pipelined, context, offset); // two more batches: three in flight again
    }
    assertThat(redis.waitedFor).as("batches waited for before their answers").isEmpty();
    process(pipelined, context, 10);
    process(pipelined, context, 11); // a sixth batch: its flush waits for the third
    assertThat(redis.waitedFor).containsExactly(2);
    assertThat(decided(context)).containsExactly("m0", "m1", "m2", "m3", "m4", "m5");

    redis.answer(3);
    redis.answer(4);
    redis.answer(5);
    punctuate(context);
    assertThat(decided(context))
        .containsExactly("m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11");
    assertThat(undecided.count()).as("sends read and not decided").isZero();
    assertThat(committed(context)).as("the mark, once everything is decided").isEmpty();
  }

  /**
   * With its one batch in flight still with Redis, a task does not wait at its next full batch: it
   * holds the sends that arrive, and flushes them all as one batch once Redis has answered, or
   * waits only when it holds {@code batch.max.pending} sends. A punctuation finding the oldest send
   * held past {@code batch.max.wait.ms} does not wait for Redis either.
   */
  @Test
  void aTaskReadsOnWhileRedisDecidesAndItsNextBatchTakesEverySendItHolds() {
    Answers redis = new Answers();
    CapProcessor holding = processor(() -> redis, NO_REPLAY, 1, 6);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    holding.init(context);
    process(holding, context, 0);
    process(holding, context, 1); // a full batch, flushed
    for (int offset = 2; offset <= 4; offset++) {
      process(holding, context, offset); // more than a batch, held: Redis has not answered
    }
    context.scheduledPunctuators().get(0).getPunctuator().punctuate(T0.toEpochMilli() + 60_000);
    assertThat(redis.sizes).as("batches flushed").containsExactly(2);
    assertThat(redis.waitedFor).as("batches waited for before their answers").isEmpty();
    assertThat(markedFrom(context)).isZero();

    redis.answer(0);
    process(holding, context, 5);
    assertThat(redis.sizes).as("the next batch: every send held").containsExactly(2, 4);
    assertThat(decided(context)).containsExactly("m0", "m1");
    assertThat(markedFrom(context)).isEqualTo(2);

    for (int offset = 6; offset <= 10; offset++) {
      process(holding, context, offset);
    }
    assertThat(redis.waitedFor).isEmpty();
    process(holding, context, 11); // six held: the flush waits for the batch before
    assertThat(redis.waitedFor).containsExactly(1);
    assertThat(redis.sizes).containsExactly(2, 4, 6);

    redis.answer(1);
    redis.answer(2);
    punctuate(context);
    assertThat(decided(context))
        .containsExactly("m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11");
    assertThat(undecided.count()).as("sends read and not decided").isZero();
    assertThat(committed(context)).as("the mark, once everything is decided").isEmpty();
  }

  /**
   * {@code sendcap.batch.wait} times the flushes that found their batch's decisions still on their
   * way, and only those: a batch answered before the thread needs it costs no wait.
   */
  @Test
  void onlyAFlushThatFindsItsBatchUnansweredCountsAWait() {
    Answers redis = new Answers();
    CapProcessor holding = processor(() -> redis, NO_REPLAY, 1, 2);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    holding.init(context);
    process(holding, context, 0);
    process(holding, context, 1);
    redis.answer(0);
    process(holding, context, 2);
    process(holding, context, 3); // the first batch, answered: forwarded without a wait
    assertThat(metrics.get("sendcap.batch.wait").timer().count()).isZero();

    process(holding, context, 4);
    process(holding, context, 5); // the second, still with Redis: this flush waits for it
    assertThat(redis.waitedFor).containsExactly(1);
    assertThat(metrics.get("sendcap.batch.wait").timer().count()).isEqualTo(1);
    assertThat(decided(context)).containsExactly("m0", "m1", "m2", "m3");
  }

  /**
   * When the limiter fails to decide the oldest of several batches in flight (block mode), the
   * later ones go back with it, whatever Redis answers them, and every send is decided once, in
   * input order, when the sends are submitted again (those Redis logged meanwhile as replays).
   */
  @Test
  void batchesInFlightBehindOneTheLimiterFailedAreDecidedAgainInInputOrder() {
    Answers redis = new Answers();
    redis.failFirst = 1;
    CapProcessor pipelined = processor(() -> redis, NO_REPLAY, 3);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    pipelined.init(context);
    for (int offset = 0; offset <= 5; offset++) {
      process(pipelined, context, offset);
    }
    redis.answer(0);
    redis.answer(1);
    redis.answer(2);
    punctuate(context); // the first fails: all six go back to the pending sends
    assertThat(decided(context)).isEmpty();
    assertThat(markedFrom(context)).isZero();

    process(pipelined, context, 6); // flushes the seven held, in input order, as one batch
    redis.answer(3);
    punctuate(context);

    assertThat(decided(context)).containsExactly("m0", "m1", "m2", "m3", "m4", "m5", "m6");
    assertThat(redis.waitedFor).isEmpty();
    assertThat(undecided.count()).as("sends read and not decided").isZero();
  }

  /**
   * A batch in flight may yet fail and be submitted again, so the batches after it must not let
   * Redis evict what its sends' decisions count: their time floor is at most its earliest send.
   */
  @Test
  void aBatchSubmittedBehindOthersInFlightKeepsTheirSendsAboveItsTimeFloor() {
    Answers redis = new Answers();
    CapProcessor pipelined = processor(() -> redis, NO_REPLAY, 3);
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    pipelined.init(context);
    Input input = new Input();
    input.process(pipelined, context, 0, day(9));
    input.process(pipelined, context, 1, day(3)); // six days behind: in flight with the first
    input.process(pipelined, context, 2, day(11)); // the stream time: admissible from day 4 on
    input.process(pipelined, context, 3, day(11));

    assertThat(redis.timeFloors).containsExactly(day(2).toEpochMilli(), day(3).toEpochMilli());
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

  /**
   * A task that crashes keeps its sends in the input: the one that restores it reads them again
   * from the mark and decides those the first had not. Whether a record read again was a send or a
   * dead letter depends on the stream time it had when it was first processed (under {@code
   * cap.clock=event} a send more than {@code cap.max-skew.ms}, 7 days, behind it is refused): not
   * the stream time of the restored task, nor that of the records read again alone, but what the
   * mark gives back.
   */
  /**
   * Under the event clock, a stream time Kafka Streams restores from before a restart, moved far
   * ahead by a record stamped far ahead, is taken no further than the wall clock plus
   * cap.max-skew.ms: the sends after it are decided.
   */
  @Test
  void aRestoredStreamTimeFarAheadOfTheClockDoesNotRefuseTheSendsAfterIt() {
    MockProcessorContext<byte[], OutputRecord> context = freshTask();
    context.setCurrentStreamTimeMs(Instant.parse("2100-01-01T00:00:00Z").toEpochMilli());
    processor.init(context);
    Input input = new Input();
    input.process(processor, context, 0, day(11));
    input.process(processor, context, 1, day(11));
    punctuate(context);

    assertThat(decided(context)).containsExactly("m0", "m1");
  }

  @Test
  void aTaskRestoredAfterACrashDecidesWhatTheFirstHadNotAndNothingElse() {
    Input input = new Input();
    CapProcessor first = processor(() -> model, input);
    MockProcessorContext<byte[], OutputRecord> before = freshTask();
    first.init(before);
    input.process(first, before, 0, T0);
    input.process(first, before, 1, day(9)); // the stream time moves on nine days
    input.process(first, before, 2, day(3)); // six days behind it: a send
    assertThatThrownBy(() -> input.process(first, before, 3, day(1)))
        .as("a send eight days behind the stream time")
        .isInstanceOf(InvalidSendException.class);
    input.process(first, before, 4, day(3)); // batches of two: m0, m1 decided; m2, m4 in flight
    input.process(first, before, 5, day(11)); // the stream time moves on again
    assertThat(decided(before)).containsExactly("m0", "m1");

    // the instance dies here, after a commit: its buffer and offset 6 are committed
    CapProcessor second = processor(() -> model, input);
    MockProcessorContext<byte[], OutputRecord> after = restoredTask(committed(before));
    after.setCurrentStreamTimeMs(day(11).toEpochMilli()); // as Kafka Streams restores it
    second.init(after);
    assertThat(input.readFrom).as("read again from the oldest undecided send").containsExactly(2L);
    assertThat(undecided.count()).as("sends read and not decided").isEqualTo(3 + 3);
    long wall = T0.plus(Duration.ofDays(1)).toEpochMilli();
    after.scheduledPunctuators().get(0).getPunctuator().punctuate(wall); // flushes 2, 4, 5
    after.scheduledPunctuators().get(0).getPunctuator().punctuate(wall); // forwards them

    assertThat(decided(after)).containsExactly("m2", "m4", "m5");
    first.close();
    assertThat(undecided.count()).as("sends read and not decided").isZero();
    assertThat(committed(after)).as("the mark, once everything is decided").isEmpty();
  }

  /**
   * Reading the input again can fail halfway (the broker gone, the registry unreachable): the task
   * fails and Kafka Streams closes it, and the sends it held by then are counted until it does.
   */
  @Test
  void aTaskWhoseReadingAgainFailsHalfwayAccountsForWhatItHeld() {
    Input input = new Input();
    CapProcessor first = processor(() -> model, input);
    MockProcessorContext<byte[], OutputRecord> before = freshTask();
    first.init(before);
    for (int offset = 0; offset <= 2; offset++) {
      input.process(first, before, offset, T0); // m0, m1 in flight, m2 pending
    }
    first.close();
    assertThat(undecided.count()).isZero();

    CapProcessor second =
        processor(
            () -> model,
            (partition, from, each) -> {
              each.accept(input.records.get(from));
              throw new StreamsException("the broker is gone");
            });
    MockProcessorContext<byte[], OutputRecord> after = restoredTask(committed(before));
    assertThatThrownBy(() -> second.init(after)).isInstanceOf(StreamsException.class);
    assertThat(undecided.count()).as("the send read before the failure").isEqualTo(1);
    second.close();

    assertThat(undecided.count()).as("sends read and not decided").isZero();
  }

  private static Instant day(int days) {
    return T0.plus(Duration.ofDays(days));
  }

  /**
   * An earlier version kept each undecided send in the buffer: a task restored from what it left
   * decides those sends, reads again only what came after them, and deletes their entries once they
   * are decided.
   */
  @Test
  void sendsAnEarlierVersionKeptInTheBufferAreDecidedOnceBesideThoseReadAgain() {
    Input input = new Input();
    List<KeyValue<Long, byte[]>> left = new ArrayList<>();
    try (SingleObjectAvroSerde<PendingSend> serde =
        new SingleObjectAvroSerde<>(PendingSend.class)) {
      for (int offset = 0; offset <= 1; offset++) {
        left.add(
            KeyValue.pair(
                (long) offset,
                serde.encode(
                    new PendingSend(
                        null, T0.toEpochMilli(), "default", send(offset, T0), List.of()))));
        input.records.put(
            (long) offset,
            new Replayed(
                offset,
                null,
                new Decoded<>(send(offset, T0), null, 0),
                T0.toEpochMilli(),
                new RecordHeaders()));
      }
    }
    // the new version took over after offset 1 was committed, read 2 and 3, and crashed
    CapProcessor upgraded = processor(() -> model, input);
    MockProcessorContext<byte[], OutputRecord> first = restoredTask(left);
    upgraded.init(first);
    input.process(upgraded, first, 2, T0); // m0, m1 and m2 in flight
    input.process(upgraded, first, 3, T0);
    assertThat(decided(first)).isEmpty();

    CapProcessor restored = processor(() -> model, input);
    MockProcessorContext<byte[], OutputRecord> after = restoredTask(committed(first));
    after.setCurrentStreamTimeMs(T0.toEpochMilli());
    restored.init(after);
    long wall = T0.plus(Duration.ofDays(1)).toEpochMilli();
    for (int i = 0; i < 4; i++) {
      after.scheduledPunctuators().get(0).getPunctuator().punctuate(wall);
    }

    assertThat(input.readFrom).containsExactly(2L);
    assertThat(decided(after)).containsExactly("m0", "m1", "m2", "m3");
    assertThat(committed(after)).as("entries left in the buffer").isEmpty();
  }
}
