package io.sendcap.topology;

import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.segment.SegmentIndex;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.InstantSource;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides the sends of one task in micro-batches: one pipelined round trip to the cap store per
 * batch (two when a global cap runs out in it; see {@link #secondChance}), outputs forwarded in
 * input order.
 *
 * <p>No loss: a send is put in a changelogged store keyed by its input offset before {@code
 * process()} returns, and deleted only after its decision has been forwarded from the stream
 * thread. Kafka Streams commits input offsets, outputs and the store's changelog together, so a
 * send whose offset is committed undecided is in the committed changelog: after a crash or a
 * rebalance the store is restored (on this or another instance) and the send decided then. A batch
 * is flushed when it holds {@code batch.max.records} sends, and by a wall-clock punctuator once its
 * oldest send has waited {@code batch.max.wait.ms}. Deciding a send twice is harmless: the limiter
 * is idempotent by message id.
 *
 * <p>Each batch is decided under one version of the policies, the newest when it is flushed, even
 * if another arrives while it is in flight. Under {@code cap.mode=shadow} a capped send is
 * delivered all the same and also written to the suppressed topic marked as shadow. Before a clean
 * shutdown, {@link Undecided#startDraining()} makes the task decide its batch in hand at once.
 *
 * <p>A send with invalid values fails {@code process()} with an {@link InvalidSendException}, which
 * {@link InvalidSendHandler} sends to the dead-letter topic. While the limiter is unreachable under
 * {@code cap.redis.failure-mode=block}, sends stay in the buffer and {@link Backpressure} holds
 * them back (the application pauses its input) until the limiter answers again.
 */
final class CapProcessor implements Processor<byte[], ScheduledSend, byte[], SpecificRecord> {
  private static final Logger LOG = LoggerFactory.getLogger(CapProcessor.class);

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
  private final Undecided undecided;
  private final GlobalQuotas quotas;
  private TreeMap<Long, PendingSend> pending = new TreeMap<>();
  private InFlight inFlight;

  private ProcessorContext<byte[], SpecificRecord> context;
  private KeyValueStore<Long, PendingSend> buffer;
  private CapStore capStore;
  private long oldestPendingSince;

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
      String storeName) {
    this.config = config;
    this.segments = segments;
    this.policies = policies;
    this.undecided = undecided;
    this.quotas = quotas;
    this.capStores = capStores;
    this.wallClock = wallClock;
    this.storeName = storeName;
    this.backpressure = backpressure;
    this.validator = new SendValidator(config.maxSkew());
    this.meters = new DecisionMeters(metrics);
  }

  @Override
  public void init(ProcessorContext<byte[], SpecificRecord> context) {
    this.context = context;
    this.buffer = context.getStateStore(storeName);
    try (KeyValueIterator<Long, PendingSend> restored = buffer.all()) {
      restored.forEachRemaining(kv -> pending.put(kv.key, kv.value));
    }
    if (!pending.isEmpty()) {
      LOG.info("task {}: {} restored sends to decide", context.taskId(), pending.size());
      undecided.add(pending.size());
    }
    oldestPendingSince = context.currentSystemTimeMs();
    capStore = capStores.get();
    Duration maxWait = config.batch().maxWait();
    Duration tick =
        Duration.ofMillis(Math.max(1, Math.min(maxWait.toMillis() / 2, Undecided.TICK.toMillis())));
    context.schedule(tick, PunctuationType.WALL_CLOCK_TIME, this::punctuate);
  }

  @Override
  public void process(Record<byte[], ScheduledSend> record) {
    long offset =
        context
            .recordMetadata()
            .orElseThrow(() -> new IllegalStateException("a send without input offset"))
            .offset();
    ScheduledSend send = record.value();
    validator.check(send, record.timestamp());
    String segment = segments.segmentOf(send.getUserId());
    PendingSend entry =
        new PendingSend(
            record.key() == null ? null : ByteBuffer.wrap(record.key()),
            record.timestamp(),
            segment == null ? Policy.DEFAULT : segment,
            send);
    if (pending.isEmpty()) {
      oldestPendingSince = context.currentSystemTimeMs();
    }
    buffer.put(offset, entry);
    pending.put(offset, entry);
    undecided.add(1);
    if (undecided.draining()) {
      flush();
      complete();
    } else if (pending.size() >= config.batch().maxRecords()) {
      flush();
    }
  }

  private void punctuate(long wallTime) {
    quotas.sweep();
    complete();
    if (!pending.isEmpty()
        && (undecided.draining()
            || wallTime - oldestPendingSince >= config.batch().maxWait().toMillis())) {
      flush();
      if (undecided.draining()) {
        complete();
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
   * A batch submitted to the cap store whose decisions have not been forwarded yet; its sends are
   * still in the changelogged buffer.
   */
  private record InFlight(
      TreeMap<Long, PendingSend> sends,
      Rules rules,
      Tokens tokens,
      List<CapRequest> requests,
      CapStore.Pending decisions,
      long now) {}

  /**
   * The global caps' verdict on a batch: the tokens each send holds (by input offset), and the
   * sends refused, with the cap and counter that were full.
   */
  private record Tokens(Map<Long, List<GlobalQuotas.Key>> held, Map<Long, Refusal> refused) {
    static final Tokens NONE = new Tokens(Map.of(), Map.of());

    /**
     * Gives back the tokens of the send at {@code offset}, which did not use them; returns the
     * counters they go back to.
     */
    List<GlobalQuotas.Key> giveBack(GlobalQuotas quotas, Long offset) {
      List<GlobalQuotas.Key> keys = held.getOrDefault(offset, List.of());
      keys.forEach(k -> quotas.giveBack(k, 1));
      return keys;
    }

    /** Gives back every token held, when none of the sends can use them. */
    void giveBackAll(GlobalQuotas quotas) {
      held.keySet().forEach(offset -> giveBack(quotas, offset));
    }
  }

  private record Refusal(GlobalCap cap, GlobalQuotas.Key key) {}

  /**
   * Forwards the batch in flight, if any, then submits the pending sends and keeps them in flight
   * while the next batch fills: Redis decides one batch while this thread reads the next. While the
   * limiter is unreachable in block mode, the sends stay pending instead.
   */
  private void flush() {
    complete();
    if (backpressure.holding()) {
      return;
    }
    long now = wallClock.millis();
    Rules batchRules = rules();
    TreeMap<Long, PendingSend> sends = pending;
    pending = new TreeMap<>();
    meters.batch(sends.size());
    Tokens tokens;
    try {
      tokens = takeTokens(sends, batchRules.version().policies().global(), now);
    } catch (LimiterUnavailableException e) {
      inFlight = new InFlight(sends, batchRules, Tokens.NONE, List.of(), failed(e), now);
      return;
    }
    List<CapRequest> requests = new ArrayList<>(sends.size());
    for (Map.Entry<Long, PendingSend> e : sends.entrySet()) {
      PendingSend p = e.getValue();
      if (!p.getSend().getTransactional() && !tokens.refused().containsKey(e.getKey())) {
        requests.add(request(p, batchRules.of(p.getSegment()), now));
      }
    }
    inFlight = new InFlight(sends, batchRules, tokens, requests, submit(requests), now);
  }

  /**
   * Takes a token of every global cap that applies, for each send of the batch that is not
   * transactional; a send that cannot have one of them all is refused and holds none.
   */
  private Tokens takeTokens(TreeMap<Long, PendingSend> sends, List<GlobalCap> caps, long now) {
    if (caps.isEmpty()) {
      return Tokens.NONE;
    }
    Map<Long, List<GlobalQuotas.Key>> keysOf = new HashMap<>();
    Map<GlobalQuotas.Key, GlobalCap> capOf = new LinkedHashMap<>();
    Map<GlobalQuotas.Key, Long> wanted = new HashMap<>();
    for (Map.Entry<Long, PendingSend> e : sends.entrySet()) {
      ScheduledSend send = e.getValue().getSend();
      if (send.getTransactional()) {
        continue;
      }
      long time = decisionTime(send, now);
      List<GlobalQuotas.Key> keys = new ArrayList<>(caps.size());
      for (GlobalCap cap : caps) {
        if (cap.appliesTo(send)) {
          GlobalQuotas.Key key =
              GlobalQuotas.Key.of(cap.name(), cap.scopeOf(send), time, cap.window().toMillis());
          keys.add(key);
          capOf.put(key, cap);
          wanted.merge(key, 1L, Long::sum);
        }
      }
      if (!keys.isEmpty()) {
        keysOf.put(e.getKey(), keys);
      }
    }
    Map<GlobalQuotas.Key, Long> left = new HashMap<>();
    try {
      for (Map.Entry<GlobalQuotas.Key, GlobalCap> e : capOf.entrySet()) {
        GlobalCap cap = e.getValue();
        long want = wanted.get(e.getKey());
        left.put(e.getKey(), quotas.acquire(e.getKey(), cap.limit(), cap.maxBatch(), want));
      }
    } catch (LimiterUnavailableException e) {
      left.forEach(quotas::giveBack);
      throw e;
    }
    Map<Long, List<GlobalQuotas.Key>> held = new HashMap<>();
    Map<Long, Refusal> refused = new HashMap<>();
    for (Map.Entry<Long, List<GlobalQuotas.Key>> e : new TreeMap<>(keysOf).entrySet()) {
      GlobalQuotas.Key full =
          e.getValue().stream().filter(k -> left.get(k) == 0).findFirst().orElse(null);
      if (full == null) {
        e.getValue().forEach(k -> left.merge(k, -1L, Long::sum));
        held.put(e.getKey(), e.getValue());
      } else {
        refused.put(e.getKey(), new Refusal(capOf.get(full), full));
      }
    }
    left.forEach(quotas::giveBack);
    return new Tokens(held, refused);
  }

  private CapStore.Pending submit(List<CapRequest> requests) {
    if (requests.isEmpty()) {
      return List::of;
    }
    try {
      return capStore.submit(requests);
    } catch (LimiterUnavailableException e) {
      return failed(e);
    }
  }

  private static CapStore.Pending failed(LimiterUnavailableException e) {
    return () -> {
      throw e;
    };
  }

  /**
   * Waits for the batch in flight and forwards its outputs in input order, then drops its sends
   * from the buffer. If the limiter could not be reached, {@code cap.redis.failure-mode} decides:
   * under {@code block} the sends go back to the pending ones, in offset order, to be submitted
   * again once the limiter answers.
   */
  private void complete() {
    if (inFlight == null) {
      return;
    }
    InFlight batch = inFlight;
    inFlight = null;
    List<Decision> decisions;
    try {
      decisions = batch.decisions().await();
      if (!batch.requests().isEmpty()) {
        backpressure.answered();
      }
    } catch (LimiterUnavailableException e) {
      if (config.limiter().failureMode() == SendcapConfig.FailureMode.BLOCK) {
        batch.tokens().giveBackAll(quotas);
        pending.putAll(batch.sends());
        backpressure.unavailable(e, pending.size());
        return;
      }
      LOG.warn(
          "limiter unavailable, {} sends decided by failure mode {}: {}",
          batch.requests().size(),
          config.limiter().failureMode(),
          e.getMessage());
      forward(batch, null, batch.tokens().refused());
      return;
    }
    Map<Long, Decision> decided = new HashMap<>();
    Set<GlobalQuotas.Key> givenBack = new HashSet<>();
    int next = 0;
    for (Map.Entry<Long, PendingSend> e : batch.sends().entrySet()) {
      if (!e.getValue().getSend().getTransactional()
          && !batch.tokens().refused().containsKey(e.getKey())) {
        Decision decision = decisions.get(next++);
        decided.put(e.getKey(), decision);
        if (decision.outcome() != Decision.Outcome.ALLOWED) {
          givenBack.addAll(batch.tokens().giveBack(quotas, e.getKey()));
        }
      }
    }
    forward(batch, decided, secondChance(batch, decided, givenBack));
  }

  /**
   * Gives the sends the global caps refused a second chance once the sends their per-user caps
   * refused have given their tokens back: the global caps are checked after the per-user ones, so a
   * send is refused only if the tokens that the rest of its batch did not use were not enough for
   * it either. Tokens are taken before the per-user call because that call logs the sends it
   * allows; the sends that get tokens now are decided by one more call. Returns the refusals that
   * stand, and adds the new decisions to {@code decided}.
   *
   * @param givenBack the counters that sends of the batch gave tokens back to
   */
  private Map<Long, Refusal> secondChance(
      InFlight batch, Map<Long, Decision> decided, Set<GlobalQuotas.Key> givenBack) {
    Map<Long, Refusal> refused = batch.tokens().refused();
    TreeMap<Long, PendingSend> again = new TreeMap<>();
    refused.forEach(
        (offset, refusal) -> {
          if (givenBack.contains(refusal.key())) {
            again.put(offset, batch.sends().get(offset));
          }
        });
    if (again.isEmpty()) {
      return refused;
    }
    Tokens tokens = Tokens.NONE;
    List<CapRequest> requests = new ArrayList<>();
    List<Long> offsets = new ArrayList<>();
    List<Decision> decisions;
    try {
      tokens = takeTokens(again, batch.rules().version().policies().global(), batch.now());
      for (Map.Entry<Long, PendingSend> e : again.entrySet()) {
        if (tokens.held().containsKey(e.getKey())) {
          PendingSend p = e.getValue();
          offsets.add(e.getKey());
          requests.add(request(p, batch.rules().of(p.getSegment()), batch.now()));
        }
      }
      decisions = requests.isEmpty() ? List.of() : capStore.submit(requests).await();
    } catch (LimiterUnavailableException e) {
      LOG.warn(
          "limiter unavailable for a second chance of {} sends: {}", again.size(), e.getMessage());
      tokens.giveBackAll(quotas);
      return refused; // as first decided, on an answer Redis gave
    }
    Map<Long, Refusal> standing = new HashMap<>(refused);
    for (int i = 0; i < offsets.size(); i++) {
      Long offset = offsets.get(i);
      Decision decision = decisions.get(i);
      standing.remove(offset);
      decided.put(offset, decision);
      if (decision.outcome() != Decision.Outcome.ALLOWED) {
        tokens.giveBack(quotas, offset);
      }
    }
    return standing;
  }

  /**
   * Forwards the outputs of a batch in input order and drops its sends from the buffer. {@code
   * decided} holds the per-user decisions by input offset, or is null if the limiter could not be
   * reached; tokens of sends it did not allow have been given back already.
   */
  private void forward(InFlight batch, Map<Long, Decision> decided, Map<Long, Refusal> refused) {
    boolean shadow = config.mode() == SendcapConfig.Mode.SHADOW;
    for (Map.Entry<Long, PendingSend> e : batch.sends().entrySet()) {
      PendingSend p = e.getValue();
      ScheduledSend send = p.getSend();
      long decidedAt = decisionTime(send, batch.now());
      Refusal refusal = refused.get(e.getKey());
      SpecificRecord out;
      if (send.getTransactional()) {
        out = Outcomes.delivery(send, p.getSegment(), decidedAt, false);
      } else if (refusal != null) {
        out = Outcomes.global(send, p.getSegment(), decidedAt, refusal.cap(), refusal.key());
      } else if (decided == null) {
        out = unavailable(send, p.getSegment(), decidedAt);
        if (!(out instanceof Delivery)) {
          batch.tokens().giveBack(quotas, e.getKey());
        }
      } else {
        Policy policy = batch.rules().of(p.getSegment());
        out = Outcomes.of(send, policy, decided.get(e.getKey()), decidedAt);
      }
      if (shadow && out instanceof Suppression capped) {
        capped.setShadow(true);
        emit(p, Outcomes.delivery(send, p.getSegment(), decidedAt, false));
      }
      emit(p, out);
    }
    for (Long offset : batch.sends().keySet()) {
      buffer.put(offset, null); // a delete that does not read back the old value
    }
    undecided.remove(batch.sends().size());
  }

  private void emit(PendingSend p, SpecificRecord out) {
    meters.count(p.getSegment(), p.getSend().getChannel(), out);
    context.forward(new Record<>(key(p), out, p.getTimestamp()));
  }

  private CapRequest request(PendingSend p, Policy policy, long now) {
    ScheduledSend send = p.getSend();
    return new CapRequest(
        send.getUserId(),
        send.getMessageId(),
        decisionTime(send, now),
        policy,
        send.getChannel(),
        send.getUserTimeZone() == null ? null : ZoneId.of(send.getUserTimeZone()));
  }

  private long decisionTime(ScheduledSend send, long now) {
    return config.limiter().clock() == SendcapConfig.Clock.EVENT
        ? send.getScheduledAt().toEpochMilli()
        : now;
  }

  private SpecificRecord unavailable(ScheduledSend send, String segment, long decidedAt) {
    return config.limiter().failureMode() == SendcapConfig.FailureMode.ALLOW
        ? Outcomes.delivery(send, segment, decidedAt, true)
        : Outcomes.unavailable(send, segment, decidedAt);
  }

  private static byte[] key(PendingSend p) {
    ByteBuffer key = p.getKey();
    if (key == null) {
      return null;
    }
    byte[] bytes = new byte[key.remaining()];
    key.duplicate().get(bytes);
    return bytes;
  }

  @Override
  public void close() {
    // Sends not decided stay in the changelogged store, for whoever runs this task next.
    undecided.remove(pending.size() + (inFlight == null ? 0 : inFlight.sends().size()));
    inFlight = null;
    if (capStore != null) {
      capStore.close();
    }
  }
}
