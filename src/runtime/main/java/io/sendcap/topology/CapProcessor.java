package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.internal.PendingHeader;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Deadline;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.segment.SegmentIndex;
import io.sendcap.serde.Decoded;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.time.ZoneId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides the sends of one task in micro-batches: one pipelined round trip to the cap store per
 * batch (two when a global cap runs out in it; see {@link #secondChance}), outputs forwarded in
 * input order, each with its input record's key, timestamp and headers.
 *
 * <p>No loss: the sends stay in the input topic, and a changelogged store ({@link PendingBuffer})
 * holds the task's mark, the input offset of its oldest undecided send, written before {@code
 * process()} returns and moved on once the send's decision has been forwarded from the stream
 * thread. Kafka Streams commits input offsets, outputs and the store's changelog together, so a
 * send whose offset is committed undecided lies between the committed mark and the committed
 * offset: after a crash or a rebalance the task (on this or another instance) reads that stretch of
 * its input again ({@link InputReplay}) and decides the sends then. A batch is flushed when it
 * holds {@code batch.max.records} sends, and by a wall-clock punctuator once its oldest send has
 * waited {@code batch.max.wait.ms}, or when its sends' bytes reach an eighth of {@code
 * batch.max.pending-bytes}; its decisions are forwarded by the next flush, or by the punctuator
 * once they have arrived, so that the thread reads on while Redis decides. When the task already
 * has {@code batch.max.in-flight} batches with Redis, a flush waits until Redis has answered the
 * oldest: the task holds the sends that arrive meanwhile, up to {@code batch.max.pending} of them
 * and {@code batch.max.pending-bytes} of their bytes (values and headers as read, so a send is
 * never encoded to be measured), and its next batch takes them all. Deciding a send twice is
 * harmless: the limiter is idempotent by message id.
 *
 * <p>Each batch is decided under one version of the policies, the newest when it is flushed, even
 * if another arrives while it is in flight. Under {@code cap.mode=shadow} a capped send is
 * delivered all the same and also written to the suppressed topic marked as shadow. Before a clean
 * shutdown, {@link Undecided#startDraining()} makes the task decide its batch in hand at once.
 *
 * <p>A send with invalid values fails {@code process()} with an {@link InvalidSendException}, which
 * {@link InvalidSendHandler} sends to the dead-letter topic. While the limiter is unreachable under
 * {@code cap.redis.failure-mode=block}, sends stay pending and {@link Backpressure} holds them back
 * (the application pauses its input) until the limiter answers again.
 *
 * <p>It is longer than most classes here because one batch's life is one story, read top to bottom:
 * buffered, flushed (time floor, deadline, tokens from {@link BatchTokens}), completed (or held, or
 * decided by the failure mode), given its second chance, forwarded, the mark moved past it.
 */
final class CapProcessor
    implements Processor<byte[], Decoded<ScheduledSend>, byte[], OutputRecord> {
  private static final Logger LOG = LoggerFactory.getLogger(CapProcessor.class);

  // the headers Kafka Streams' own dead letters carry (ExceptionHandlerUtils, internal)
  private static final String EXCEPTION_HEADER = "__streams.errors.exception";
  private static final String MESSAGE_HEADER = "__streams.errors.message";
  private static final String STACKTRACE_HEADER = "__streams.errors.stacktrace";
  private static final String TOPIC_HEADER = "__streams.errors.topic";
  private static final String PARTITION_HEADER = "__streams.errors.partition";
  private static final String OFFSET_HEADER = "__streams.errors.offset";

  private final SendcapConfig config;
  private final SegmentIndex segments;
  private final LivePolicies policies;
  private Rules rules;
  private final Supplier<CapStore> capStores;
  private final InstantSource wallClock;
  private final String storeName;
  private final Backpressure backpressure;
  private final SendValidator validator;
  private final DecisionMeters meters;
  private final Counter deadLetters;
  private final Undecided undecided;
  private final GlobalQuotas quotas;
  private final InputReplay replay;

  /**
   * A send in hand: its input record's key, timestamp and headers, its segment, the send and, when
   * it was read in sendcap's own schema, its Avro body, which the outputs copy instead of encoding
   * the send again; the task's stream time when it was processed (see {@link PendingBuffer.Mark});
   * and its bytes as read, value and headers, which {@code batch.max.pending-bytes} bounds.
   */
  private record Held(
      byte[] key,
      long timestamp,
      String segment,
      ScheduledSend send,
      byte[] body,
      Header[] headers,
      long streamTime,
      int size,
      long scheduledAt,
      Channel channel,
      boolean transactional) {
    /**
     * The send's fields that its decision's forwarding reads, copied while the send is still in the
     * processor's cache: a task forwards its sends only after Redis has answered for them, and
     * reading them from the send then took a trip to memory for the send and another for its {@code
     * scheduledAt} (BENCHMARKS.md).
     */
    Held(
        byte[] key,
        long timestamp,
        String segment,
        ScheduledSend send,
        byte[] body,
        Header[] headers,
        long streamTime,
        int size) {
      this(
          key,
          timestamp,
          segment,
          send,
          body,
          headers,
          streamTime,
          size,
          send.getScheduledAt().toEpochMilli(),
          send.getChannel(),
          send.getTransactional());
    }

    /**
     * A send an earlier version kept in the buffer, with the headers it kept. Its bytes as read are
     * not known, and it counts for none: such sends are read once, at start-up, as many as that
     * version held.
     */
    static Held earlier(PendingSend entry) {
      List<PendingHeader> kept = entry.getHeaders();
      Header[] headers = new Header[kept.size()];
      for (int i = 0; i < headers.length; i++) {
        PendingHeader h = kept.get(i);
        headers[i] =
            new RecordHeader(h.getKey(), h.getValue() == null ? null : bytes(h.getValue()));
      }
      return new Held(
          entry.getKey() == null ? null : bytes(entry.getKey()),
          entry.getTimestamp(),
          entry.getSegment(),
          entry.getSend(),
          null,
          headers,
          Long.MIN_VALUE,
          0);
    }
  }

  private ByOffset<Held> pending = new ByOffset<>();

  /** The bytes of the pending sends, as read (see {@link Held#size()}). */
  private long pendingBytes;

  /** {@code batch.max.pending-bytes}. */
  private final long maxPendingBytes;

  /** The pending bytes at which a batch is flushed (see {@link SendcapConfig.Batch}). */
  private final long maxBatchBytes;

  /** The earliest {@code scheduledAt} of the pending sends, ms; {@code Long.MAX_VALUE} if none. */
  private long earliestPending = Long.MAX_VALUE;

  /**
   * The batches submitted to the cap store whose decisions have not been forwarded yet, oldest
   * first: at most {@code batch.max.in-flight}, and one while the policies have global caps. Kafka
   * Streams often hands one task many records in a row: with one batch in flight, the thread would
   * wait for Redis at each of that task's flushes instead of reading on while Redis decides.
   */
  private final ArrayDeque<InFlight> inFlight = new ArrayDeque<>();

  private ProcessorContext<byte[], OutputRecord> context;
  private PendingBuffer buffer;
  private CapStore capStore;
  private long oldestPendingSince;
  private Cancellable punctuator;

  /**
   * The task's stream time as {@link SendValidator} sees it: the newest record timestamp of the
   * sends it let through, which a send it refuses (one stamped far ahead) does not move, unlike
   * Kafka Streams' own. Restored from the mark, or else from Kafka Streams' stream time as
   * committed, no further than the wall clock plus {@code cap.max-skew.ms}.
   */
  private long streamTime;

  /** The mark in the buffer, as last written or restored; null if there is none. */
  private PendingBuffer.Mark marked;

  /**
   * The highest input offset of the sends restored from an earlier version's buffer, which keeps
   * them until they are decided; -1 if there are none. The mark covers the sends after it.
   */
  private long earlierUntil = -1;

  CapProcessor(
      SendcapConfig config,
      LivePolicies policies,
      SegmentIndex segments,
      Supplier<CapStore> capStores,
      InstantSource wallClock,
      GlobalQuotas quotas,
      Backpressure backpressure,
      Undecided undecided,
      MeterRegistry metrics,
      String storeName,
      InputReplay replay) {
    this.config = config;
    this.segments = segments;
    this.policies = policies;
    this.undecided = undecided;
    this.quotas = quotas;
    this.capStores = capStores;
    this.wallClock = wallClock;
    this.storeName = storeName;
    this.backpressure = backpressure;
    this.replay = replay;
    this.validator =
        new SendValidator(
            config.maxSkew(), config.limiter().clock() == SendcapConfig.Clock.EVENT, wallClock);
    this.meters = new DecisionMeters(metrics);
    this.deadLetters = DeadLetterMeters.counter(metrics, "redis-key");
    this.maxPendingBytes = config.batch().maxPendingBytes();
    this.maxBatchBytes = config.batch().maxBatchBytes();
  }

  @Override
  public void init(ProcessorContext<byte[], OutputRecord> context) {
    this.context = context;
    KeyValueStore<Long, byte[]> store = context.getStateStore(storeName);
    this.buffer = new PendingBuffer(store);
    // Kafka Streams may close and init the same instance again (a revived task): what the buffer
    // holds now, as restored, is all there is to go by.
    inFlight.clear();
    // the rules from the start too: a new task's first send would otherwise find none, a branch the
    // compiled code of running tasks has never taken
    rules = Rules.of(policies.current());
    // a batch's room from the start: a task that grew its first batch would take a branch that the
    // compiled code of running tasks has never seen, and have it compiled again
    pending = new ByOffset<>(config.batch().maxRecords());
    pendingBytes = 0;
    earliestPending = Long.MAX_VALUE;
    TreeMap<Long, PendingSend> earlier = buffer.restoreEarlier();
    earlier.forEach((offset, entry) -> hold(offset, Held.earlier(entry)));
    earlierUntil = earlier.isEmpty() ? -1 : earlier.lastKey();
    undecided.add(earlier.size(), pendingBytes);
    if (!earlier.isEmpty()) {
      LOG.info(
          "task {}: {} sends restored from an earlier version's buffer to decide",
          context.taskId(),
          earlier.size());
    }
    marked = buffer.mark();
    streamTime = notAhead(context.currentStreamTimeMs());
    if (marked != null) {
      readAgain(marked);
    }
    oldestPendingSince = context.currentSystemTimeMs();
    capStore = new OnDemandCapStore(capStores);
    Duration maxWait = config.batch().maxWait();
    Duration tick =
        Duration.ofMillis(Math.max(1, Math.min(maxWait.toMillis() / 2, Undecided.TICK.toMillis())));
    punctuator = context.schedule(tick, PunctuationType.WALL_CLOCK_TIME, this::punctuate);
  }

  @Override
  public void process(Record<byte[], Decoded<ScheduledSend>> record) {
    long offset =
        context
            .recordMetadata()
            .orElseThrow(() -> new IllegalStateException("a send without input offset"))
            .offset();
    Decoded<ScheduledSend> read = record.value();
    ScheduledSend send = read == null ? null : read.record(); // a null value: the validator says so
    long streamTime = Math.max(this.streamTime, record.timestamp());
    validator.check(send, record.timestamp(), streamTime);
    this.streamTime = streamTime;
    if (pending.isEmpty()) {
      oldestPendingSince = context.currentSystemTimeMs();
    }
    Held held = held(record.key(), record.timestamp(), read, record.headers(), streamTime);
    hold(offset, held);
    undecided.add(1, held.size());
    mark();
    if (undecided.draining()) {
      flush();
      completeAll();
    } else if ((pending.size() >= config.batch().maxRecords() || pendingBytes >= maxBatchBytes)
        && mayFlush()) {
      flush();
    }
  }

  /**
   * Whether a flush now goes to Redis without waiting for it: the batches in flight it would
   * forward first have their decisions, or the task holds {@code batch.max.pending} sends or {@code
   * batch.max.pending-bytes} of them, past which it waits rather than hold more. Until then the
   * thread reads on (this task's sends and other tasks'), and the next batch is the larger: Kafka
   * Streams hands one task hundreds of records in a row, and a flush that waited at each {@code
   * batch.max.records} would keep the thread idle while Redis decides.
   */
  private boolean mayFlush() {
    if (pending.size() >= config.batch().maxPending() || pendingBytes >= maxPendingBytes) {
      return true;
    }
    int forwardedFirst = inFlight.size() - keptInFlight(rules());
    for (InFlight batch : inFlight) {
      if (forwardedFirst-- <= 0) {
        break;
      }
      if (!batch.decisions().ready()) {
        return false;
      }
    }
    return true;
  }

  /**
   * How many batches may stay in flight when one more is flushed: {@code batch.max.in-flight} - 1,
   * or none while the policies have global caps (a batch's tokens are reserved from what the
   * batches before it left).
   */
  private int keptInFlight(Rules batchRules) {
    return batchRules.version().policies().global().isEmpty()
        ? config.batch().maxInFlight() - 1
        : 0;
  }

  private Held held(
      byte[] key, long timestamp, Decoded<ScheduledSend> read, Headers headers, long streamTime) {
    ScheduledSend send = read.record();
    String segment = segments.segmentOf(send.getUserId());
    Header[] kept = headers.toArray();
    return new Held(
        key,
        timestamp,
        segment == null ? Policy.DEFAULT : segment,
        send,
        read.body(),
        kept,
        streamTime,
        read.bytes() + SizeCheckingDeserializer.size(kept));
  }

  private void hold(long offset, Held send) {
    pending.put(offset, send);
    pendingBytes += send.size();
    earliestPending = Math.min(earliestPending, send.scheduledAt());
  }

  /**
   * Reads the task's input again from its restored mark and holds the sends it had processed and
   * not decided by its last commit: the records the checks of {@link SendValidator} let through
   * then, with the stream time they had then, which the mark's stream time and the records'
   * timestamps give back. A record they refused went to the dead-letter topic then.
   */
  private void readAgain(PendingBuffer.Mark mark) {
    int before = pending.size();
    long bytesBefore = pendingBytes;
    long[] streamTime = {notAhead(mark.streamTime())};
    try {
      replay.read(
          new TopicPartition(config.topics().input(), context.taskId().partition()),
          mark.from(),
          r -> {
            long then = Math.max(streamTime[0], r.timestamp());
            if (pending.containsKey(r.offset())) {
              streamTime[0] = then;
              return; // restored from an earlier version's buffer
            }
            ScheduledSend send = r.value() == null ? null : r.value().record();
            try {
              validator.check(send, r.timestamp(), then);
            } catch (InvalidSendException e) {
              return;
            }
            streamTime[0] = then;
            hold(r.offset(), held(r.key(), r.timestamp(), r.value(), r.headers(), streamTime[0]));
          });
    } finally {
      // counted as they are held, so that a task whose read fails halfway accounts for them
      undecided.add(pending.size() - before, pendingBytes - bytesBefore);
      this.streamTime = streamTime[0];
    }
    LOG.info(
        "task {}: {} undecided sends read again from offset {} of {}",
        context.taskId(),
        pending.size() - before,
        mark.from(),
        config.topics().input());
  }

  /**
   * Writes the buffer's mark when the oldest undecided send has changed, and deletes it when every
   * send read is decided. Called after each send held and each batch forwarded: the mark covering a
   * send is in the store before {@code process()} returns, so no commit can cover an undecided send
   * that the mark does not. The sends restored from an earlier version's buffer are covered by its
   * entries instead.
   */
  private void mark() {
    ByOffset<Held> sends = pending;
    int oldest = pending.indexAbove(earlierUntil);
    for (InFlight batch : inFlight) {
      int first = batch.sends().indexAbove(earlierUntil);
      if (first < batch.sends().size()) {
        sends = batch.sends();
        oldest = first;
        break;
      }
    }
    if (oldest == sends.size()) {
      if (marked != null) {
        buffer.clearMark();
        marked = null;
      }
    } else if (marked == null || marked.from() != sends.offset(oldest)) {
      marked = new PendingBuffer.Mark(sends.offset(oldest), sends.value(oldest).streamTime());
      buffer.mark(marked);
    }
  }

  private void punctuate(long wallTime) {
    quotas.sweep();
    if (undecided.draining()) {
      completeAll();
    } else {
      // a batch whose decisions are still on their way is forwarded at a later tick or by a later
      // flush: waiting here would keep this thread from reading while Redis decides
      while (!inFlight.isEmpty() && inFlight.peekFirst().decisions().ready()) {
        complete();
      }
    }
    if (!pending.isEmpty()
        && (undecided.draining()
            || (wallTime - oldestPendingSince >= config.batch().maxWait().toMillis()
                && mayFlush()))) {
      flush();
      if (undecided.draining()) {
        completeAll();
      }
    }
  }

  /** One version of the policies, by segment, as a batch is decided under it. */
  private record Rules(LivePolicies.Version version, Map<String, Policy> bySegment) {
    static Rules of(LivePolicies.Version version) {
      Map<String, Policy> bySegment = new HashMap<>();
      version.policies().segments().forEach(p -> bySegment.put(p.segment(), p));
      return new Rules(version, bySegment);
    }

    Policy of(String segment) {
      Policy p = bySegment.get(segment);
      return p == null ? version.policies().defaultPolicy() : p;
    }
  }

  /** The rules of the newest version of the policies. */
  private Rules rules() {
    LivePolicies.Version current = policies.current();
    if (rules == null || rules.version() != current) {
      rules = Rules.of(current);
    }
    return rules;
  }

  /**
   * A batch submitted to the cap store whose decisions have not been forwarded yet; the mark still
   * covers its sends. {@code asked} holds the input offsets of {@code requests}, in the same order,
   * which is the order of {@code sends}; {@code bytes} is what its sends had as read.
   */
  private record InFlight(
      ByOffset<Held> sends,
      long bytes,
      Rules rules,
      BatchTokens tokens,
      List<Long> asked,
      List<CapRequest> requests,
      CapStore.Pending decisions,
      long now,
      long timeFloor,
      long earliest,
      Deadline deadline) {}

  /**
   * Submits the pending sends and keeps them in flight while the next batches fill: Redis decides
   * while this thread reads on. The oldest batches in flight are forwarded first while there are
   * {@code batch.max.in-flight} of them, or any at all when the policies have global caps (a
   * batch's tokens are reserved from what the batches before it left). While the limiter is
   * unreachable in block mode, the sends stay pending instead.
   */
  private void flush() {
    Rules batchRules = rules();
    int keep = keptInFlight(batchRules);
    while (inFlight.size() > keep) {
      complete();
    }
    if (backpressure.holding()) {
      return;
    }
    long now = wallClock.millis();
    ByOffset<Held> sends = pending;
    long bytes = pendingBytes;
    long floor = timeFloor(now);
    long earliest = earliestPending;
    // room for as many sends as this batch holds, a batch's at least: under load the next batch is
    // as large, and a task that flushes a few sends at a time does not allocate batch.max.pending's
    pending =
        new ByOffset<>(
            Math.min(
                config.batch().maxPending(), Math.max(config.batch().maxRecords(), sends.size())));
    pendingBytes = 0;
    earliestPending = Long.MAX_VALUE;
    meters.batch(sends.size());
    Deadline deadline = Deadline.in(config.limiter().timeout());
    BatchTokens tokens;
    try {
      List<GlobalCap> global = batchRules.version().policies().global();
      tokens =
          global.isEmpty()
              ? BatchTokens.none()
              : BatchTokens.reserve(
                  quotas,
                  global,
                  scheduled(sends),
                  send -> decisionTime(send.getScheduledAt().toEpochMilli(), now),
                  deadline);
    } catch (LimiterUnavailableException e) {
      inFlight.addLast(
          new InFlight(
              sends,
              bytes,
              batchRules,
              BatchTokens.none(),
              List.of(),
              List.of(),
              failed(e),
              now,
              floor,
              earliest,
              deadline));
      return;
    }
    List<Long> asked = new ArrayList<>(sends.size());
    List<CapRequest> requests = new ArrayList<>(sends.size());
    for (int i = 0; i < sends.size(); i++) {
      Held p = sends.value(i);
      if (!p.transactional()) {
        CapRequest request = request(p, batchRules.of(p.segment()), now, floor);
        asked.add(sends.offset(i));
        requests.add(tokens.isRefused(sends.offset(i)) ? request.asProbe() : request);
      }
    }
    inFlight.addLast(
        new InFlight(
            sends,
            bytes,
            batchRules,
            tokens,
            asked,
            requests,
            submit(requests, deadline),
            now,
            floor,
            earliest,
            deadline));
  }

  /**
   * The earliest decision time that a send decided from this batch on may have: log entries no such
   * decision can count may be evicted. Under the wall clock, now; under the event clock, the
   * earliest {@code scheduledAt} of the pending sends, of the batches in flight (which the limiter
   * may fail to decide, to be submitted again), or of a send still admissible later ({@code
   * cap.max-skew.ms} behind the stream time), whichever is earlier.
   */
  private long timeFloor(long now) {
    if (config.limiter().clock() != SendcapConfig.Clock.EVENT) {
      return now;
    }
    long floor = Math.min(earliestPending, streamTime - config.maxSkew().toMillis());
    for (InFlight batch : inFlight) {
      floor = Math.min(floor, batch.earliest());
    }
    return floor;
  }

  private static TreeMap<Long, ScheduledSend> scheduled(ByOffset<Held> sends) {
    TreeMap<Long, ScheduledSend> scheduled = new TreeMap<>();
    sends.forEach((offset, p) -> scheduled.put(offset, p.send()));
    return scheduled;
  }

  private CapStore.Pending submit(List<CapRequest> requests, Deadline deadline) {
    if (requests.isEmpty()) {
      return List::of;
    }
    try {
      return capStore.submit(requests, deadline);
    } catch (LimiterUnavailableException e) {
      return failed(e);
    }
  }

  private static CapStore.Pending failed(LimiterUnavailableException e) {
    return () -> {
      throw e;
    };
  }

  /** Forwards every batch in flight, oldest first. */
  private void completeAll() {
    while (!inFlight.isEmpty()) {
      complete();
    }
  }

  /**
   * Waits for the oldest batch in flight and forwards its outputs in input order, then moves the
   * mark past its sends. If the limiter could not be reached, {@code cap.redis.failure-mode}
   * decides: under {@code block} the sends of every batch in flight go back to the pending ones, in
   * offset order, to be submitted again once the limiter answers.
   */
  private void complete() {
    if (inFlight.isEmpty()) {
      return;
    }
    // the batch stays in flight until it is settled: if waiting for it fails otherwise (a task
    // corrupted), close() still accounts for its sends and forfeits its tokens
    InFlight batch = inFlight.peekFirst();
    List<Decision> decisions;
    try {
      decisions = await(batch.decisions());
      if (!batch.requests().isEmpty()) {
        backpressure.answered();
      }
    } catch (LimiterUnavailableException e) {
      SendcapConfig.FailureMode mode = config.limiter().failureMode();
      if (mode != SendcapConfig.FailureMode.BLOCK && !e.decided().isEmpty()) {
        partlyDecided(batch, e, mode);
        return;
      }
      if (mode != SendcapConfig.FailureMode.ALLOW) {
        batch.tokens().forfeit();
      }
      if (mode == SendcapConfig.FailureMode.BLOCK) {
        // the later batches too, whatever Redis answers them: their sends are decided after these
        inFlight.removeFirst();
        batch.sends().forEach(this::hold);
        for (InFlight later : inFlight) {
          later.tokens().forfeit();
          later.sends().forEach(this::hold);
        }
        inFlight.clear();
        backpressure.unavailable(e, pending.size());
        return;
      }
      LOG.warn(
          "limiter unavailable, {} sends decided by failure mode {}: {}",
          batch.requests().size(),
          mode,
          e.getMessage());
      backpressure.decidedWithout(e);
      inFlight.removeFirst();
      forward(batch, null, batch.tokens().refused());
      return;
    }
    Map<Long, BatchTokens.Refusal> refused = new HashMap<>(batch.tokens().refused());
    Decision[] decided = settle(batch, decisions, refused);
    secondChance(batch, decided, refused);
    inFlight.removeFirst();
    forward(batch, decided, refused);
  }

  /**
   * The per-user decisions of {@code batch.asked()}, in its order, with the tokens of each decided
   * send settled: null for a send refused by a global cap that is not a replay (its refusal in
   * {@code refused} stands) and for a send the limiter did not decide.
   */
  private static Decision[] settle(
      InFlight batch, List<Decision> decisions, Map<Long, BatchTokens.Refusal> refused) {
    Decision[] decided = new Decision[batch.asked().size()];
    for (int i = 0; i < decided.length; i++) {
      Long offset = batch.asked().get(i);
      Decision decision = decisions.get(i);
      if (decision == null || decision.outcome() == Decision.Outcome.NOT_A_REPLAY) {
        continue; // refused by a global cap, and not a replay: the refusal stands for now
      }
      if (!refused.isEmpty()) {
        refused.remove(offset);
      }
      decided[i] = decision;
      batch.tokens().settle(offset, decision);
    }
    return decided;
  }

  /**
   * Forwards a batch that the limiter decided only in part (a call of it failed) under {@code
   * cap.redis.failure-mode} {@code allow} or {@code suppress}: each send Redis decided as Redis
   * decided it (a send it allowed was logged, one it capped must not be delivered fail-open), the
   * others by the failure mode. The refusals of global caps stand: no second chance.
   */
  private void partlyDecided(
      InFlight batch, LimiterUnavailableException e, SendcapConfig.FailureMode mode) {
    Map<Long, BatchTokens.Refusal> refused = new HashMap<>(batch.tokens().refused());
    Decision[] decided = settle(batch, e.decided(), refused);
    if (mode != SendcapConfig.FailureMode.ALLOW) {
      batch.tokens().forfeit();
    }
    long undecided = e.decided().stream().filter(d -> d == null).count();
    LOG.warn(
        "limiter could not decide {} of {} sends, decided by failure mode {}: {}",
        undecided,
        batch.requests().size(),
        mode,
        e.getMessage());
    backpressure.decidedWithout(e);
    inFlight.removeFirst();
    forward(batch, decided, refused);
  }

  /**
   * Waits for decisions, timing the wait in {@code sendcap.batch.wait} when they have not arrived
   * yet: how long this thread is held up by the limiter.
   */
  private List<Decision> await(CapStore.Pending decisions) {
    if (decisions.ready()) {
      return decisions.await();
    }
    long blocked = System.nanoTime();
    try {
      return decisions.await();
    } finally {
      meters.waited(System.nanoTime() - blocked);
    }
  }

  /**
   * Gives the sends the global caps refused a second chance once the sends their per-user caps
   * refused have given their tokens back: the global caps are checked after the per-user ones, so a
   * send is refused only if the tokens that the rest of its batch did not use were not enough for
   * it either. The sends that get tokens now are decided by one more call; they leave {@code
   * refused} and join {@code decided}. If the limiter cannot answer, the refusals stand (they were
   * made on an answer Redis gave). {@code decided} holds the decisions of {@code batch.asked()}, in
   * its order.
   */
  private void secondChance(
      InFlight batch, Decision[] decided, Map<Long, BatchTokens.Refusal> refused) {
    TreeMap<Long, ScheduledSend> again = new TreeMap<>();
    for (Long offset : batch.tokens().secondChances()) {
      if (refused.containsKey(offset)) {
        again.put(offset, batch.sends().get(offset).send());
      }
    }
    if (again.isEmpty()) {
      return;
    }
    BatchTokens tokens;
    try {
      tokens =
          BatchTokens.reserve(
              quotas,
              batch.rules().version().policies().global(),
              again,
              send -> decisionTime(send.getScheduledAt().toEpochMilli(), batch.now()),
              batch.deadline());
    } catch (LimiterUnavailableException e) {
      LOG.warn(
          "limiter unavailable for a second chance of {} sends: {}", again.size(), e.getMessage());
      return;
    }
    List<Long> asked = new ArrayList<>();
    List<CapRequest> requests = new ArrayList<>();
    for (Long offset : again.keySet()) {
      Held p = batch.sends().get(offset);
      CapRequest request =
          request(p, batch.rules().of(p.segment()), batch.now(), batch.timeFloor());
      asked.add(offset);
      // refused again, it may yet be a replay of a send this call allows before it
      requests.add(tokens.isRefused(offset) ? request.asProbe() : request);
    }
    List<Decision> decisions;
    try {
      decisions = await(submit(requests, batch.deadline()));
    } catch (LimiterUnavailableException e) {
      LOG.warn(
          "limiter unavailable for a second chance of {} sends: {}", asked.size(), e.getMessage());
      tokens.forfeit();
      return;
    }
    for (int i = 0; i < asked.size(); i++) {
      Long offset = asked.get(i);
      Decision decision = decisions.get(i);
      if (decision.outcome() != Decision.Outcome.NOT_A_REPLAY) {
        refused.remove(offset);
        // every send refused by a global cap was asked (as a probe) in the first call
        decided[Collections.binarySearch(batch.asked(), offset)] = decision;
        tokens.settle(offset, decision);
      }
    }
  }

  /**
   * Forwards the outputs of a batch in input order and moves the mark past its sends. {@code
   * decided} holds the per-user decisions of {@code batch.asked()}, in its order (null for a send
   * the limiter did not decide), or is null if the limiter could not be reached; tokens of sends it
   * did not allow have been given back already. A send whose user's key Redis could not use goes to
   * the dead-letter topic.
   */
  private void forward(InFlight batch, Decision[] decided, Map<Long, BatchTokens.Refusal> refused) {
    boolean shadow = config.mode() == SendcapConfig.Mode.SHADOW;
    List<Long> asked = batch.asked();
    int next = 0; // the index in asked of the next send asked about, as the sends come in order
    long nextAsked = askedAt(asked, next);
    ByOffset<Held> sends = batch.sends();
    for (int i = 0; i < sends.size(); i++) {
      long offset = sends.offset(i);
      Held p = sends.value(i);
      ScheduledSend send = p.send();
      long decidedAt = decisionTime(p.scheduledAt(), batch.now());
      Decision decision = null;
      Policy policy = null; // the policy the send was asked about under
      if (offset == nextAsked) {
        decision = decided == null ? null : decided[next];
        policy = batch.requests().get(next).policy();
        next++;
        nextAsked = askedAt(asked, next);
      }
      BatchTokens.Refusal refusal = refused.isEmpty() ? null : refused.get(offset);
      SpecificRecord out;
      if (p.transactional()) {
        out = Outcomes.delivery(send, p.segment(), decidedAt, false);
      } else if (refusal != null) {
        out = Outcomes.global(send, p.segment(), decidedAt, refusal.cap(), refusal.key());
      } else if (decision == null) {
        out = unavailable(send, p.segment(), decidedAt);
      } else if (decision.outcome() == Decision.Outcome.KEY_REFUSED) {
        deadLetter(p, offset, decision.reason());
        continue;
      } else {
        out = Outcomes.of(send, policy, decision, decidedAt);
      }
      if (shadow && out instanceof Suppression capped) {
        capped.setShadow(true);
        emit(p, Outcomes.delivery(send, p.segment(), decidedAt, false));
      }
      emit(p, out);
    }
    undecided.remove(batch.sends().size(), batch.bytes());
    if (earlierUntil >= 0 && (pending.isEmpty() || pending.offset(0) > earlierUntil)) {
      buffer.dropEarlier();
      earlierUntil = -1;
    }
    mark();
  }

  /**
   * The input offset of the {@code next}th send asked about; -1 past the last. A batch whose last
   * sends were not asked about (transactional ones) made the end of the list a branch the compiled
   * forwarding loop rarely took, and taking it threw that code away; here it is taken once a batch.
   */
  private static long askedAt(List<Long> asked, int next) {
    return next < asked.size() ? asked.get(next) : -1;
  }

  /**
   * Forwards one output of a send with the input record's timestamp and headers: tracing and
   * correlation ids travel in headers, and a decision is often forwarded from the punctuator, where
   * no input record's headers are at hand, so they are kept with the send.
   */
  private void emit(Held p, SpecificRecord out) {
    meters.count(p.segment(), p.channel(), out);
    context.forward(
        new Record<>(
            p.key(),
            new OutputRecord(out, p.send(), p.body()),
            p.timestamp(),
            new RecordHeaders(p.headers())));
  }

  /**
   * Forwards a send to the dead-letter topic with the reason in the headers the topology's other
   * dead letters carry: its user's key in Redis holds what sendcap did not write, so it cannot be
   * decided until someone removes that key.
   */
  private void deadLetter(Held p, long offset, String reason) {
    String message =
        "Redis cannot use the key of user "
            + p.send().getUserId()
            + ", which holds what sendcap did not write (another application's key at sendcap's"
            + " key prefix cap.redis.key-prefix?); remove that key to have the user's sends"
            + " decided: "
            + reason;
    LOG.warn("the send at offset {} goes to the dead-letter topic: {}", offset, message);
    deadLetters.increment();
    RecordHeaders headers = new RecordHeaders(p.headers());
    String exception = InvalidSendException.class.getName();
    headers.add(header(EXCEPTION_HEADER, exception));
    headers.add(header(MESSAGE_HEADER, message));
    headers.add(header(STACKTRACE_HEADER, exception + ": " + message));
    headers.add(header(TOPIC_HEADER, config.topics().input()));
    headers.add(header(PARTITION_HEADER, String.valueOf(context.taskId().partition())));
    headers.add(header(OFFSET_HEADER, String.valueOf(offset)));
    context.forward(
        new Record<>(p.key(), OutputRecord.deadLetter(p.send(), p.body()), p.timestamp(), headers));
  }

  private static Header header(String key, String value) {
    return new RecordHeader(key, value.getBytes(StandardCharsets.UTF_8));
  }

  private CapRequest request(Held p, Policy policy, long now, long timeFloor) {
    ScheduledSend send = p.send();
    return new CapRequest(
        send.getUserId(),
        send.getMessageId(),
        decisionTime(p.scheduledAt(), now),
        policy,
        p.channel(),
        send.getUserTimeZone() == null ? null : ZoneId.of(send.getUserTimeZone()),
        timeFloor,
        false);
  }

  /**
   * A stream time restored from elsewhere (Kafka Streams' committed one, or an earlier version's
   * mark) as the validator would have let it grow: no further than the wall clock plus {@code
   * cap.max-skew.ms}, so that a record stamped far ahead before a restart does not hold it there.
   */
  private long notAhead(long restored) {
    return Math.min(restored, wallClock.millis() + config.maxSkew().toMillis());
  }

  /** When a send scheduled at {@code scheduledAt} is decided, under the configured clock. */
  private long decisionTime(long scheduledAt, long now) {
    return config.limiter().clock() == SendcapConfig.Clock.EVENT ? scheduledAt : now;
  }

  private SpecificRecord unavailable(ScheduledSend send, String segment, long decidedAt) {
    return config.limiter().failureMode() == SendcapConfig.FailureMode.ALLOW
        ? Outcomes.delivery(send, segment, decidedAt, true)
        : Outcomes.unavailable(send, segment, decidedAt);
  }

  private static byte[] bytes(ByteBuffer buffer) {
    byte[] bytes = new byte[buffer.remaining()];
    buffer.duplicate().get(bytes);
    return bytes;
  }

  /**
   * Lets go of the sends in hand: undecided ones stay in the input, behind the mark, for whoever
   * runs this task next (this instance again, if Kafka Streams revives the task). The tokens of a
   * batch in flight are forfeited: Redis may have logged its sends, and their next decision, a
   * replay, takes none.
   */
  @Override
  public void close() {
    if (punctuator != null) {
      punctuator.cancel();
      punctuator = null;
    }
    int held = pending.size();
    long bytes = pendingBytes;
    for (InFlight batch : inFlight) {
      held += batch.sends().size();
      bytes += batch.bytes();
      batch.tokens().forfeit();
    }
    undecided.remove(held, bytes);
    pending = new ByOffset<>();
    pendingBytes = 0;
    inFlight.clear();
    if (capStore != null) {
      capStore.close();
      capStore = null;
    }
  }
}
