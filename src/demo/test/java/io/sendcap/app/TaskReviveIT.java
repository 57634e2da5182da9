package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.RedisConnector;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import io.sendcap.topology.Backpressure;
import io.sendcap.topology.RegistryOutage;
import io.sendcap.topology.SendcapTopology;
import io.sendcap.topology.Undecided;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * Two revivals of tasks by Kafka Streams in the middle of a blast, on a real KRaft broker and a
 * real Redis under exactly-once v2: every input is still decided exactly once across deliveries,
 * suppressed and the dead-letter topic, no user holds more allowed sends in a window than its cap,
 * and whether each send is allowed is as the reference model says.
 *
 * <p>The fault is a {@link TaskCorruptedException} that the cap store of a task throws from {@code
 * process()}, after Redis has decided the batch in flight and before its decisions are forwarded,
 * while the next batch is full and pending. The stream thread answers it as it answers a corruption
 * it finds itself ({@code StreamThread.runLoop} → {@code TaskManager.handleCorruption}): it commits
 * the other tasks, closes the corrupted one dirty (the processor's {@code close()}), wipes its
 * state, revives it, restores its buffer from the changelog up to the last commit, calls {@code
 * init} again on the same processor instance, re-reads its input from the last committed offset and
 * enforces a rebalance.
 *
 * <p>Two things of Kafka Streams 4.3 shape the test. The commit in {@code handleCorruption} also
 * commits the open transaction, which the stream thread's tasks share, with whatever the corrupted
 * task forwarded in it, without that task's input offsets: those outputs would come again once the
 * input is read again. So the fault is thrown only at the first await of a task after a commit (its
 * forwards all follow an await); the application's producers are wrapped to count the commits. And
 * a revived task that is still waiting for its init when the enforced rebalance hands out the
 * assignment is closed and replaced by a new task, which does not reset its input to the committed
 * offset, so that the records read past it are skipped; {@code poll.ms=0} lets the stream thread
 * init the revived task before the rebalance completes, and the next fault waits for the rebalance.
 *
 * <p>Input records are partitioned by user ({@code user % 4}), so that a cap store knows its task
 * from the users it is asked about.
 */
class TaskReviveIT {
  private static final int SENDS = 20_000;
  private static final int USERS = 2_000;
  private static final int PARTITIONS = 4;
  private static final int FAULTS = 2;
  private static final Duration DEADLINE = Duration.ofSeconds(60);
  private static final String APP = "sendcap-revive";
  private static final String INPUT = "sends-revive";
  private static final String DELIVERIES = "deliveries-revive";
  private static final String SUPPRESSED = "suppressed-revive";
  private static final String DLQ = "dlq-revive";
  private static final String STREAM_THREAD =
      "org.apache.kafka.streams.processor.internals.StreamThread";
  private static final String STREAM_TASK =
      "org.apache.kafka.streams.processor.internals.StreamTask";
  private static final String CAP_PROCESSOR = "io.sendcap.topology.CapProcessor";

  @TempDir static Path dir;
  private static TestKafka kafka;
  private static EmbeddedRedis redis;
  private static final LogLines logs = new LogLines();
  private static Level streamTaskLevel;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    logs.attach(STREAM_THREAD, STREAM_TASK);
    Logger streamTask = (Logger) LoggerFactory.getLogger(STREAM_TASK);
    streamTaskLevel = streamTask.getLevel();
    streamTask.setLevel(Level.INFO); // "Closed dirty", "Suspended from CREATED"
    kafka = TestKafka.start();
    kafka.createTopics(PARTITIONS, INPUT, DELIVERIES, SUPPRESSED, DLQ);
    redis = EmbeddedRedis.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    logs.detach(STREAM_THREAD, STREAM_TASK);
    ((Logger) LoggerFactory.getLogger(STREAM_TASK)).setLevel(streamTaskLevel);
    if (redis != null) {
      redis.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  @Test
  void tasksRevivedMidBlastDecideEveryInputOnceAndNoUserGoesOverACap() throws Exception {
    List<ProducerRecord<byte[], byte[]>> blast =
        byUser(scenario.records(INPUT, SENDS, USERS, 0, 20, 13));
    SendcapConfig config = config();
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    List<CapScenario.Outcome> outcomes;
    FaultyStores stores;
    int replacedThreads;
    try (RedisConnector limiter = RedisConnector.connect(config.limiter(), metrics)) {
      stores = new FaultyStores(limiter::open);
      try (Instance app = Instance.start(config, stores, limiter, metrics)) {
        stores.tasks(app.tasksOf(INPUT));
        CapScenario.produce(kafka.bootstrapServers(), blast);
        for (int fault = 1; fault <= FAULTS; fault++) {
          int n = fault;
          stores.arm();
          TopicReader.await("fault " + n + " thrown", DEADLINE, () -> stores.fired().size() >= n);
          Fault f = stores.fired().get(n - 1);
          TopicReader.await(
              "task " + f.task() + " deciding again after fault " + n,
              DEADLINE,
              () -> stores.storesOf(f.partition()).size() > stores.faultsOn(f.partition()));
          TopicReader.await(
              "the rebalance that fault " + n + " brings about",
              DEADLINE,
              () -> stores.rebalances() > f.rebalancesBefore());
        }
        long inputEnd = endOffsets(INPUT);
        assertThat(inputEnd).isEqualTo(SENDS);
        TopicReader.await(
            "group " + APP + " to commit " + INPUT + " to its end",
            DEADLINE,
            () -> kafka.committedOffsets(APP, INPUT) == inputEnd);
        awaitBuffersEmpty();
        outcomes =
            scenario.outcomes(readToEnd(DELIVERIES, SUPPRESSED, DLQ), DELIVERIES, SUPPRESSED);
        assertThat(app.streams.state()).isEqualTo(KafkaStreams.State.RUNNING);
        replacedThreads = app.replacedThreads.get();
      }
    }

    assertThat(notOnce(blast, outcomes))
        .as("inputs not decided exactly once: message id -> times in the input, times decided")
        .isEmpty();
    scenario.assertEachInputOnce(blast, outcomes);
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
    assertThat(notAsTheModel(blast, outcomes, config.limiter().idempotencyRetention()))
        .as("sends allowed or not unlike the reference model: message id -> allowed by the model")
        .isEmpty();
    assertThat(outcomes)
        .as("no send delivered unchecked")
        .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen());
    assertRevivedInPlace(stores, replacedThreads);
  }

  /**
   * Checks that each fault revived its task on the same stream thread: the thread logged the
   * corruption, the task closed dirty, its processor opened a new cap store on {@code init} and
   * went on deciding with it, no other task was revived and no thread was replaced.
   */
  private static void assertRevivedInPlace(FaultyStores stores, int replacedThreads) {
    List<Fault> fired = stores.fired();
    assertThat(fired).hasSize(FAULTS);
    assertThat(replacedThreads).as("stream threads replaced").isZero();
    String thread = fired.get(0).thread();
    for (int partition = 0; partition < PARTITIONS; partition++) {
      int faults = stores.faultsOn(partition);
      TaskId task = stores.taskOf(partition);
      assertThat(logs.containing("Detected the states of tasks [" + task + "] are corrupted"))
          .as("corruptions of task %s handled by the stream thread", task)
          .hasSize(faults);
      assertThat(logs.containing("task [" + task + "] Closed dirty"))
          .as("dirty closes of task %s", task)
          .hasSize(faults);
      assertThat(logs.containing("task [" + task + "] Suspended from CREATED"))
          .as("revived task %s closed before its init, to be replaced by a new one", task)
          .isEmpty();
      List<Store> opened = stores.storesOf(partition);
      assertThat(opened).as("cap stores opened by inits of task %s", task).hasSize(faults + 1);
      assertThat(opened).allMatch(s -> s.thread.equals(thread), "opened on " + thread);
      assertThat(opened.subList(0, faults)).allMatch(s -> s.closed, "closed by close()");
    }
  }

  /**
   * The message ids whose outcomes are not as many as their input records, with both numbers, in
   * order of id.
   */
  private Map<String, String> notOnce(
      List<ProducerRecord<byte[], byte[]>> input, List<CapScenario.Outcome> outcomes) {
    Map<String, Long> decided = new TreeMap<>();
    outcomes.forEach(o -> decided.merge(o.messageId(), 1L, Long::sum));
    Map<String, Long> sent = scenario.idsOf(input);
    Map<String, String> wrong = new TreeMap<>();
    Set<String> ids = new TreeSet<>(sent.keySet());
    ids.addAll(decided.keySet());
    for (String id : ids) {
      long in = sent.getOrDefault(id, 0L);
      long out = decided.getOrDefault(id, 0L);
      if (in != out) {
        wrong.put(id, in + " in, " + out + " out");
      }
    }
    return wrong;
  }

  /**
   * The sends whose outcome, allowed or not, differs from the reference model of the rules, with
   * the model's: a replayed send keeps whether it was allowed, though a suppression's details may
   * change (the log holds the sends of its batch decided after it).
   */
  private Map<String, Boolean> notAsTheModel(
      List<ProducerRecord<byte[], byte[]>> input,
      List<CapScenario.Outcome> outcomes,
      Duration retention) {
    SlidingLogModel model = new SlidingLogModel(retention);
    Map<String, Boolean> expected = new HashMap<>();
    for (ScheduledSend send : scenario.sendsOf(input)) {
      Policy policy =
          send.getUserId() <= CapScenario.VIPS
              ? scenario.policies.segments().get(0)
              : scenario.policies.defaultPolicy();
      boolean allowed =
          send.getTransactional()
              || model
                  .decide(
                      new CapRequest(
                          send.getUserId(),
                          send.getMessageId(),
                          send.getScheduledAt().toEpochMilli(),
                          policy,
                          send.getChannel(),
                          null))
                  .allowed();
      expected.putIfAbsent(send.getMessageId(), allowed);
    }
    Map<String, Boolean> actual = CapScenario.allowedById(outcomes);
    Map<String, Boolean> wrong = new TreeMap<>();
    expected.forEach(
        (id, allowed) -> {
          if (!allowed.equals(actual.get(id))) {
            wrong.put(id, allowed);
          }
        });
    return wrong;
  }

  /** The blast with each record in partition {@code user % 4} of the input. */
  private static List<ProducerRecord<byte[], byte[]>> byUser(
      List<ProducerRecord<byte[], byte[]>> records) {
    return records.stream()
        .map(
            r ->
                new ProducerRecord<>(
                    r.topic(),
                    partitionOf(Long.parseLong(new String(r.key(), StandardCharsets.UTF_8))),
                    r.timestamp(),
                    r.key(),
                    r.value()))
        .toList();
  }

  private static int partitionOf(long user) {
    return (int) (user % PARTITIONS);
  }

  /**
   * The settings of the application: the scenario's, with batches of 100 that are flushed when full
   * (the wall-clock punctuator ticks every 100 ms), under exactly-once v2 by default, and a stream
   * thread that polls without waiting (see the class comment).
   */
  private static SendcapConfig config() {
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), APP);
    p.setProperty("topic.input", INPUT);
    p.setProperty("topic.deliveries", DELIVERIES);
    p.setProperty("topic.suppressed", SUPPRESSED);
    p.setProperty("topic.dlq", DLQ);
    p.setProperty("cap.redis.key-prefix", "revive");
    p.setProperty("batch.max.records", "100");
    p.setProperty("batch.max.wait.ms", "200");
    p.setProperty("poll.ms", "0");
    // A fault is thrown only at a task's first await after a commit (see above): commits a tenth of
    // a second apart, as Kafka Streams' default, leave the blast many such points to fault at; at
    // sendcap's default of a second it may be decided before the second fault finds one.
    p.setProperty("commit.interval.ms", "100");
    SendcapConfig config = CapScenario.config(p, "");
    assertThat(config.streams().getProperty("processing.guarantee")).isEqualTo("exactly_once_v2");
    return config;
  }

  /**
   * Waits until the committed changelog of the tasks' buffers holds no send: with the input
   * committed to its end, every send has then been decided, and its outputs committed in the
   * transaction that deleted it from the buffer. (A committed input offset alone means that the
   * send is buffered, not that it is decided.)
   */
  private static void awaitBuffersEmpty() {
    String changelog = APP + "-" + SendcapTopology.PENDING_STORE + "-changelog";
    try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
      List<TopicPartition> all = partitions(consumer, changelog);
      consumer.assign(all);
      consumer.seekToBeginning(all);
      Set<String> buffered = new HashSet<>();
      TopicReader.await(
          "the buffers' changelog to be read to its end and hold no send",
          DEADLINE,
          () -> {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
              String key = r.partition() + ":" + Arrays.toString(r.key());
              if (r.value() == null) {
                buffered.remove(key);
              } else {
                buffered.add(key);
              }
            }
            Map<TopicPartition, Long> end = consumer.endOffsets(all);
            return buffered.isEmpty()
                && all.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp));
          });
    }
  }

  /** The sum of the end offsets of the topic's partitions. */
  private static long endOffsets(String topic) {
    try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
      return consumer.endOffsets(partitions(consumer, topic)).values().stream()
          .mapToLong(Long::longValue)
          .sum();
    }
  }

  /**
   * Reads the committed records of the topics from their beginning up to their end offsets as they
   * are now (read_committed: up to the last stable offset).
   */
  private static List<ConsumerRecord<byte[], byte[]>> readToEnd(String... topics) {
    try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
      List<TopicPartition> all = new ArrayList<>();
      for (String topic : topics) {
        all.addAll(partitions(consumer, topic));
      }
      consumer.assign(all);
      consumer.seekToBeginning(all);
      Map<TopicPartition, Long> end = consumer.endOffsets(all);
      List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
      long deadline = System.nanoTime() + DEADLINE.toNanos();
      while (!all.stream().allMatch(tp -> consumer.position(tp) >= end.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError("read " + records.size() + " records, not to " + end);
        }
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
      return records;
    }
  }

  private static KafkaConsumer<byte[], byte[]> consumer() {
    return new KafkaConsumer<>(
        Map.of(
            ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ConsumerConfig.ISOLATION_LEVEL_CONFIG,
            "read_committed"),
        new ByteArrayDeserializer(),
        new ByteArrayDeserializer());
  }

  private static List<TopicPartition> partitions(KafkaConsumer<?, ?> consumer, String topic) {
    List<TopicPartition> partitions = new ArrayList<>();
    for (PartitionInfo p : consumer.partitionsFor(topic)) {
      partitions.add(new TopicPartition(topic, p.partition()));
    }
    return partitions;
  }

  /**
   * One fault thrown: the task it corrupted, its input partition, the stream thread it was thrown
   * on and the number of sends of the batch in flight, which Redis had decided.
   */
  private record Fault(
      TaskId task, int partition, String thread, int inFlight, int rebalancesBefore) {}

  /**
   * The cap stores of the application's tasks, each a Redis one wrapped. Once armed, the first
   * store to await a batch from {@code process()} with nothing forwarded since the last commit
   * throws a {@link TaskCorruptedException} for its task, after Redis has decided the batch.
   */
  private static final class FaultyStores implements Supplier<CapStore> {
    private final Supplier<CapStore> redis;
    private final AtomicLong commits = new AtomicLong();
    private final AtomicBoolean armed = new AtomicBoolean();
    private final AtomicInteger rebalances = new AtomicInteger();
    private final List<Fault> fired = new CopyOnWriteArrayList<>();
    private final Map<Integer, List<Store>> byPartition = new ConcurrentHashMap<>();
    private volatile Map<Integer, TaskId> tasks = Map.of();

    FaultyStores(Supplier<CapStore> redis) {
      this.redis = redis;
    }

    @Override
    public CapStore get() {
      return new Store(redis.get(), this);
    }

    /** Tells the stores the task of each input partition. */
    void tasks(Map<Integer, TaskId> byPartition) {
      tasks = Map.copyOf(byPartition);
    }

    TaskId taskOf(int partition) {
      return tasks.get(partition);
    }

    /** Makes the next store that may throw do so, once. */
    void arm() {
      armed.set(true);
    }

    List<Fault> fired() {
      return List.copyOf(fired);
    }

    /** Counts a rebalance of the application completed. */
    void rebalanced() {
      rebalances.incrementAndGet();
    }

    int rebalances() {
      return rebalances.get();
    }

    int faultsOn(int partition) {
      return (int) fired.stream().filter(f -> f.partition() == partition).count();
    }

    /** The stores that decided sends of the input partition, in the order of their first batch. */
    List<Store> storesOf(int partition) {
      return List.copyOf(byPartition.getOrDefault(partition, List.of()));
    }

    /** The application's Kafka clients, with producers that count the transactions committed. */
    DefaultKafkaClientSupplier clients() {
      return new DefaultKafkaClientSupplier() {
        @Override
        public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
          return new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer()) {
            @Override
            public void commitTransaction() {
              super.commitTransaction();
              commits.incrementAndGet();
            }
          };
        }
      };
    }
  }

  /**
   * The cap store of one task: a Redis one that may throw the armed fault. It learns its input
   * partition from the user of its first request.
   */
  private static final class Store implements CapStore {
    private static final StackWalker STACK = StackWalker.getInstance();

    private final CapStore delegate;
    private final FaultyStores stores;
    final String thread = Thread.currentThread().getName();
    volatile boolean closed;
    private int partition = -1;
    private long commitsAtLastAwait = -1;

    Store(CapStore delegate, FaultyStores stores) {
      this.delegate = delegate;
      this.stores = stores;
    }

    @Override
    public Pending submit(List<CapRequest> batch) {
      if (partition < 0) {
        partition = partitionOf(batch.get(0).userId());
        stores.byPartition.computeIfAbsent(partition, p -> new CopyOnWriteArrayList<>()).add(this);
      }
      Pending pending = delegate.submit(batch);
      return () -> await(pending, batch.size());
    }

    /**
     * Waits for the decisions of a batch, then throws the armed fault if the task has forwarded
     * nothing since the last commit (every forward follows an await) and the batch is awaited from
     * {@code process()}, where the next batch is full.
     */
    private List<Decision> await(Pending pending, int size) {
      List<Decision> decisions = pending.await();
      long commits = stores.commits.get();
      boolean firstSinceCommit = commitsAtLastAwait < commits;
      commitsAtLastAwait = commits;
      if (firstSinceCommit && inProcess() && stores.armed.compareAndSet(true, false)) {
        TaskId task = stores.taskOf(partition);
        stores.fired.add(
            new Fault(
                task, partition, Thread.currentThread().getName(), size, stores.rebalances()));
        throw new TaskCorruptedException(Set.of(task));
      }
      return decisions;
    }

    /** Whether the cap processor awaits from {@code process()}, not from its punctuator. */
    private static boolean inProcess() {
      return STACK.walk(
          frames ->
              frames.anyMatch(
                  f ->
                      f.getClassName().equals(CAP_PROCESSOR)
                          && f.getMethodName().equals("process")));
    }

    @Override
    public void close() {
      closed = true;
      delegate.close();
    }
  }

  /**
   * The application as {@link SendcapApp#start} assembles it, but with the given cap stores and
   * Kafka clients, and a handler that counts the stream threads replaced.
   */
  private static final class Instance implements AutoCloseable {
    final KafkaStreams streams;
    final GlobalQuotas quotas;
    final AtomicInteger replacedThreads = new AtomicInteger();

    private Instance(KafkaStreams streams, GlobalQuotas quotas) {
      this.streams = streams;
      this.quotas = quotas;
    }

    static Instance start(
        SendcapConfig config,
        FaultyStores stores,
        RedisConnector limiter,
        SimpleMeterRegistry metrics)
        throws InterruptedException {
      new PolicyTopic(config, DEADLINE).ensureExists();
      LivePolicies policies =
          new LivePolicies(Policies.load(config.policiesFile()), config.policiesFile().toString());
      SegmentRegistry segments = new SegmentRegistry(policies.current().policies().segmentNames());
      InstantSource clock = InstantSource.system();
      GlobalQuotas quotas =
          new GlobalQuotas(
              limiter.openQuotas(),
              config.limiter().keyPrefix(),
              clock,
              config.limiter().globalLease(),
              metrics);
      KafkaStreams streams =
          new KafkaStreams(
              SendcapTopology.build(
                  config,
                  policies,
                  segments,
                  stores,
                  quotas,
                  clock,
                  Backpressure.NONE,
                  RegistryOutage.NONE,
                  new Undecided(metrics),
                  metrics),
              SendcapTopology.streamsProperties(config, metrics),
              stores.clients());
      Instance instance = new Instance(streams, quotas);
      streams.setUncaughtExceptionHandler(
          e -> {
            instance.replacedThreads.incrementAndGet();
            return StreamThreadExceptionResponse.REPLACE_THREAD;
          });
      streams.setStateListener(
          (now, before) -> {
            if (before == KafkaStreams.State.REBALANCING && now == KafkaStreams.State.RUNNING) {
              stores.rebalanced();
            }
          });
      streams.pause();
      streams.start();
      assertThat(segments.awaitAll(DEADLINE)).as("segments missing").isEmpty();
      streams.resume();
      TopicReader.await(
          "Kafka Streams to run",
          DEADLINE,
          () -> streams.state() == KafkaStreams.State.RUNNING && !streams.isPaused());
      return instance;
    }

    /** The active task of this instance that reads each partition of {@code topic}. */
    Map<Integer, TaskId> tasksOf(String topic) {
      Map<Integer, TaskId> tasks = new ConcurrentHashMap<>();
      TopicReader.await(
          "a task of each partition of " + topic,
          DEADLINE,
          () -> {
            for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
              for (TaskMetadata t : thread.activeTasks()) {
                t.topicPartitions().stream()
                    .filter(tp -> tp.topic().equals(topic))
                    .forEach(tp -> tasks.put(tp.partition(), t.taskId()));
              }
            }
            return tasks.size() == PARTITIONS;
          });
      return tasks;
    }

    @Override
    public void close() {
      streams.close(Duration.ofSeconds(30));
      quotas.close();
    }
  }

  /** The log lines of some loggers while the test runs, for what Kafka Streams did. */
  private static final class LogLines extends AppenderBase<ILoggingEvent> {
    private final Queue<String> lines = new ConcurrentLinkedQueue<>();

    void attach(String... loggers) {
      start();
      for (String name : loggers) {
        ((Logger) LoggerFactory.getLogger(name)).addAppender(this);
      }
    }

    void detach(String... loggers) {
      for (String name : loggers) {
        ((Logger) LoggerFactory.getLogger(name)).detachAppender(this);
      }
      stop();
    }

    @Override
    protected void append(ILoggingEvent event) {
      lines.add(event.getFormattedMessage());
    }

    List<String> containing(String text) {
      return lines.stream().filter(l -> l.contains(text)).toList();
    }
  }
}
