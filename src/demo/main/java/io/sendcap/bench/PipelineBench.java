package io.sendcap.bench;

import io.sendcap.app.SendcapApp;
import io.sendcap.blast.BlastDriver;
import io.sendcap.blast.KafkaTopics;
import io.sendcap.cli.OutputReader;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.TempDirs;
import io.sendcap.topology.SendcapTopology;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The pipeline benchmark: one generated campaign blast through the real sendcap application, then
 * the same records through a {@link Passthrough} topology, on one embedded broker, with the same
 * Kafka Streams settings and the same number of instances.
 *
 * <p>Each run is timed from the first record produced to the last output record read (committed
 * only). After a warm-up each pipeline is timed twice, in the order pass-through, capped, capped,
 * pass-through, and each one's figures are those of its two runs together: whichever pipeline runs
 * first pays for compiling what is left of the code both use (the broker's, the Kafka clients'),
 * and this order shares that out evenly.
 */
final class PipelineBench {
  /** Share of the blast's records that are not Avro, as in {@code demo}: the DLQ is exercised. */
  static final double POISON_RATE = 0.001;

  private static final String CAPPED_ID = "sendcap-bench";
  private static final String PASSTHROUGH_ID = "sendcap-bench-passthrough";
  private static final String PASSTHROUGH_INPUT = "passthrough-sends";
  private static final String PASSTHROUGH_OUTPUT = "passthrough-out";
  private static final String WARM_UP = "warm-up-";
  private static final String SECOND = "second-";

  private static final Duration RUNNING_TIMEOUT = Duration.ofMinutes(2);
  private static final Duration POLL_INTERVAL = Duration.ofMillis(50);
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(60);

  /** What to run; {@code redisClusterNodes} 0 means one standalone Redis. */
  record Options(
      int sends,
      int users,
      int partitions,
      int instances,
      int redisClusterNodes,
      int redisReplicas,
      int waitReplicas,
      long seed,
      Path policiesFile,
      int warmUpSends) {}

  /**
   * One timed run: records read from its output topics, bytes produced to its input, the CPU time
   * used meanwhile by this JVM (broker, instances, producer, reader), by the application's threads
   * within it (by {@link ThreadCpu.Share}), and by Redis, and the JVM's minor page faults (-1 if
   * unknown).
   */
  record Run(
      long records,
      long inputBytes,
      int runs,
      long elapsedMs,
      double jvmCpuSeconds,
      Map<ThreadCpu.Share, Double> cpuSecondsByShare,
      double compilationSeconds,
      double redisCpuSeconds,
      long minorFaults) {
    double perSecond() {
      return recordsInAll() / elapsedSeconds();
    }

    /** The records of every run this one adds up: the time and CPU figures are theirs. */
    private long recordsInAll() {
      return Math.max(1, records * runs);
    }

    /** JVM CPU time per record, in microseconds. */
    double jvmCpuMicrosPerRecord() {
      return jvmCpuSeconds * 1e6 / recordsInAll();
    }

    /**
     * CPU time per record of the application's own threads (stream threads, their Kafka clients,
     * Lettuce), in microseconds: the JVM's figure without the broker, the blast, the reader, the
     * JIT compiler and the garbage collector.
     */
    double appCpuMicrosPerRecord() {
      return cpuMicrosPerRecord(ThreadCpu.Share.STREAM_THREADS)
          + cpuMicrosPerRecord(ThreadCpu.Share.OTHER_APP_THREADS)
          + cpuMicrosPerRecord(ThreadCpu.Share.REDIS_CLIENT);
    }

    /**
     * JVM CPU time per record without the JIT compiler's, in microseconds: what the run costs once
     * the code it runs is compiled (the compiler's own figure is printed beside it).
     */
    double jvmCpuWithoutJitMicrosPerRecord() {
      return jvmCpuMicrosPerRecord() - cpuMicrosPerRecord(ThreadCpu.Share.JIT_COMPILER);
    }

    /** CPU time per record of one share of the JVM's threads, in microseconds. */
    double cpuMicrosPerRecord(ThreadCpu.Share share) {
      return cpuSecondsByShare.getOrDefault(share, 0.0) * 1e6 / recordsInAll();
    }

    /** Redis CPU time per record, in microseconds. */
    double redisCpuMicrosPerRecord() {
      return redisCpuSeconds * 1e6 / recordsInAll();
    }

    /**
     * The JVM's CPU time per second of the run: the cores it kept busy, on average. Its CPU per
     * record is this divided by the records per second, so a run that keeps the same cores busy
     * costs more per record the slower it goes.
     */
    double jvmCores() {
      return jvmCpuSeconds / elapsedSeconds();
    }

    /** Redis's CPU time per second of the run: the cores it kept busy, on average. */
    double redisCores() {
      return redisCpuSeconds / elapsedSeconds();
    }

    /** The run's wall time, in seconds; never zero, so that it may divide. */
    double elapsedSeconds() {
      return Math.max(1, elapsedMs) / 1000.0;
    }

    /**
     * The JVM's minor page faults per 1,000 records (memory touched for the first time, as a
     * growing heap's); NaN if unknown.
     */
    double minorFaultsPerThousandRecords() {
      return minorFaults < 0 ? Double.NaN : minorFaults * 1000.0 / recordsInAll();
    }

    /**
     * This run and {@code other}, of the same blast, as one: their times and CPU added up; the
     * records and input bytes of a run, the fewer of the two, so that a run that lost a send shows.
     */
    Run plus(Run other) {
      Map<ThreadCpu.Share, Double> shares = new EnumMap<>(ThreadCpu.Share.class);
      shares.putAll(cpuSecondsByShare);
      other.cpuSecondsByShare.forEach(
          (share, seconds) -> shares.merge(share, seconds, Double::sum));
      return new Run(
          Math.min(records, other.records),
          Math.min(inputBytes, other.inputBytes),
          runs + other.runs,
          elapsedMs + other.elapsedMs,
          jvmCpuSeconds + other.jvmCpuSeconds,
          shares,
          compilationSeconds + other.compilationSeconds,
          redisCpuSeconds + other.redisCpuSeconds,
          minorFaults < 0 || other.minorFaults < 0 ? -1 : minorFaults + other.minorFaults);
    }
  }

  /**
   * What the capped run decided (records on the deliveries, suppressed and dead-letter topics) and
   * what it cost Redis, summed over the instances.
   */
  record Capped(
      Run run,
      List<Integer> split,
      long allowed,
      long suppressed,
      long deadLetters,
      long redisCalls,
      long redisDecisions,
      long redisFlushes,
      double limiterWaitSeconds,
      int streamThreads) {
    /**
     * The share of the stream threads' time spent blocked on a batch whose decisions had not
     * arrived ({@code sendcap.batch.wait} over the run): near 1, Redis sets the pace; near 0, the
     * JVM does.
     */
    double limiterWaitShare() {
      return limiterWaitSeconds / (run.elapsedSeconds() * streamThreads);
    }

    /** Sends decided per pipelined flush, that is per network round trip. */
    double decisionsPerRoundTrip() {
      return redisFlushes == 0 ? 0 : (double) redisDecisions / redisFlushes;
    }

    /** Script calls per pipelined flush. */
    double callsPerRoundTrip() {
      return redisFlushes == 0 ? 0 : (double) redisCalls / redisFlushes;
    }

    /** Sends decided per script call (EVALSHA). */
    double decisionsPerCall() {
      return redisCalls == 0 ? 0 : (double) redisDecisions / redisCalls;
    }

    /**
     * Redis CPU time per send the limiter decided, in microseconds: transactional sends and dead
     * letters cost Redis nothing, so this is Redis's cost of a decision.
     */
    double redisCpuMicrosPerDecision() {
      return run.redisCpuSeconds() * 1e6 / Math.max(1, redisDecisions);
    }

    /**
     * This run and {@code other}, a run of the same blast from the same fresh state, as one: their
     * costs added up, their decisions, which must be the same, once.
     */
    Capped plus(Capped other) {
      if (allowed != other.allowed
          || suppressed != other.suppressed
          || deadLetters != other.deadLetters) {
        throw new IllegalStateException(
            String.format(
                "two capped runs of one blast decided differently: %,d + %,d + %,d and %,d + %,d +"
                    + " %,d (allowed, suppressed, dead letters)",
                allowed,
                suppressed,
                deadLetters,
                other.allowed,
                other.suppressed,
                other.deadLetters));
      }
      return new Capped(
          run.plus(other.run),
          split,
          allowed,
          suppressed,
          deadLetters,
          redisCalls + other.redisCalls,
          redisDecisions + other.redisDecisions,
          redisFlushes + other.redisFlushes,
          limiterWaitSeconds + other.limiterWaitSeconds,
          streamThreads);
    }
  }

  /**
   * Both runs, the Redis they capped against, the process's peak memory after both, and each
   * pipeline's two timed runs apart, in the order they ran: the first of each pays for more of the
   * compiling than the second (BENCHMARKS.md, "The first timed capped run pays most of it").
   */
  record Result(
      Capped capped,
      Run passthrough,
      String redis,
      PeakMemory memory,
      List<Run> cappedRuns,
      List<Run> passthroughRuns) {
    /** Capped throughput over pass-through throughput. */
    double ratio() {
      return capped.run().perSecond() / passthrough.perSecond();
    }

    /** Capped JVM CPU per record over pass-through JVM CPU per record: the bar of issue 16. */
    double jvmCpuRatio() {
      return capped.run().jvmCpuMicrosPerRecord() / passthrough.jvmCpuMicrosPerRecord();
    }

    /** The same without the JIT compiler's threads. */
    double jvmCpuRatioWithoutJit() {
      return capped.run().jvmCpuWithoutJitMicrosPerRecord()
          / passthrough.jvmCpuWithoutJitMicrosPerRecord();
    }
  }

  private final Options options;
  private final PrintStream progress;
  private final BlastDriver blast;

  PipelineBench(Options options, PrintStream progress) {
    this.options = options;
    this.progress = progress;
    this.blast =
        new BlastDriver(options.sends(), options.users(), POISON_RATE, options.seed(), progress);
  }

  /** Runs both measurements; the servers are stopped and their data deleted when it returns. */
  Result run() throws Exception {
    Path work = TempDirs.create("sendcap-bench-pipeline-");
    Policies policies = Policies.load(options.policiesFile());
    progress.println("Starting embedded Redis and Kafka (KRaft) ...");
    try (BenchRedis redis = BenchRedis.start(options.redisClusterNodes(), options.redisReplicas());
        EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      String bootstrap = kafka.bootstrapServers();
      List<SendcapConfig> capped = configs(CAPPED_ID, bootstrap, redis, work, new Properties());
      SendcapConfig.Topics t = capped.get(0).topics();
      KafkaTopics.create(
          bootstrap,
          options.partitions(),
          List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
      blast.publishSegments(policies.segmentNames(), bootstrap, t.segments());
      progress.printf(
          "Kafka %s, %s %s; %,d sends over %,d users, %d partitions, %d instance(s)%n",
          bootstrap,
          redis.describe(),
          redis.uri(),
          options.sends(),
          options.users(),
          options.partitions(),
          options.instances());
      if (options.warmUpSends() > 0) {
        warmUp(bootstrap, redis, work);
      }
      Run passthroughFirst = runPassthrough("", bootstrap, redis, work, blast);
      Capped cappedRun = runCapped(capped, bootstrap, redis, blast);
      // the second capped run on topics, an application id and Redis keys of its own: it decides
      // from the same fresh state as the first
      Properties second = topics(SECOND, "r");
      createTopics(bootstrap, second);
      Capped cappedAgain =
          runCapped(
              configs(SECOND + CAPPED_ID, bootstrap, redis, work, second), bootstrap, redis, blast);
      Run passthroughAgain = runPassthrough(SECOND, bootstrap, redis, work, blast);
      return new Result(
          cappedRun.plus(cappedAgain),
          passthroughFirst.plus(passthroughAgain),
          redis.describe(),
          PeakMemory.now(),
          List.of(cappedRun.run(), cappedAgain.run()),
          List.of(passthroughFirst, passthroughAgain));
    } finally {
      TempDirs.delete(work);
    }
  }

  /**
   * Runs both pipelines once, untimed, on a blast of their own ({@code warmUpSends} sends, other
   * topics, other Redis keys), so that less of the JIT compiler's work and of the interpreted code
   * before it falls in the timed runs: without it the first timed run pays for compiling the Kafka
   * clients and Streams code that the later ones find compiled. Less, not none: C2 goes on
   * compiling for minutes (methods called once per request or batch reach its thresholds slowly),
   * and the capped runs compile Lettuce's and sendcap's code besides, so the report gives the JVM's
   * figures without the compiler's threads beside the whole.
   */
  private void warmUp(String bootstrap, BenchRedis redis, Path work) {
    progress.printf(
        "warm-up: %,d sends through both pipelines, not timed%n", options.warmUpSends());
    BlastDriver warm =
        new BlastDriver(
            options.warmUpSends(), options.users(), POISON_RATE, options.seed() + 1, progress);
    Properties topics = topics(WARM_UP, "w");
    createTopics(bootstrap, topics);
    runCapped(configs(WARM_UP + CAPPED_ID, bootstrap, redis, work, topics), bootstrap, redis, warm);
    runPassthrough(WARM_UP, bootstrap, redis, work, warm);
  }

  /**
   * The settings of a capped run of its own: topics named with {@code prefix}, Redis keys under
   * {@code keyPrefix}.
   */
  private static Properties topics(String prefix, String keyPrefix) {
    Properties topics = new Properties();
    topics.setProperty("topic.input", prefix + "sends");
    topics.setProperty("topic.deliveries", prefix + "deliveries");
    topics.setProperty("topic.suppressed", prefix + "suppressed");
    topics.setProperty("topic.dlq", prefix + "dlq");
    topics.setProperty("cap.redis.key-prefix", keyPrefix);
    return topics;
  }

  private void createTopics(String bootstrap, Properties topics) {
    KafkaTopics.create(
        bootstrap,
        options.partitions(),
        List.of("topic.input", "topic.deliveries", "topic.suppressed", "topic.dlq").stream()
            .map(topics::getProperty)
            .toList());
  }

  /**
   * One configuration per instance: the same application id, a state directory each, and {@code
   * overrides} on top.
   */
  private List<SendcapConfig> configs(
      String applicationId, String bootstrap, BenchRedis redis, Path work, Properties overrides) {
    List<SendcapConfig> configs = new ArrayList<>();
    for (int i = 0; i < options.instances(); i++) {
      Properties p =
          BlastDriver.appProperties(
              applicationId,
              bootstrap,
              redis.uri(),
              work.resolve(applicationId + "-" + i),
              options.policiesFile());
      p.setProperty("cap.redis.cluster", Boolean.toString(redis.cluster()));
      p.setProperty("cap.redis.wait-replicas", Integer.toString(options.waitReplicas()));
      p.putAll(overrides);
      configs.add(SendcapConfig.from(p, "bench pipeline, instance " + i));
    }
    return configs;
  }

  private Capped runCapped(
      List<SendcapConfig> configs, String bootstrap, BenchRedis redis, BlastDriver blast) {
    SendcapConfig.Topics t = configs.get(0).topics();
    List<SendcapApp> apps = new ArrayList<>();
    try {
      for (SendcapConfig config : configs) {
        progress.printf("starting sendcap instance %d of %d%n", apps.size() + 1, configs.size());
        apps.add(SendcapApp.start(config));
      }
      awaitRunning(apps.stream().<Supplier<KafkaStreams.State>>map(a -> a::state).toList());
      List<Integer> split =
          awaitSplit(configs.get(0).streams().getProperty("application.id"), t.input(), bootstrap);
      List<String> outputs = List.of(t.deliveries(), t.suppressed(), t.deadLetters());
      TopicCounts counts = new TopicCounts();
      String applicationId = configs.get(0).streams().getProperty("application.id");
      Run run = timed("capped", applicationId, t.input(), outputs, counts, bootstrap, redis, blast);
      return new Capped(
          run,
          split,
          counts.of(t.deliveries()),
          counts.of(t.suppressed()),
          counts.of(t.deadLetters()),
          apps.stream().mapToLong(a -> a.redis().calls()).sum(),
          apps.stream().mapToLong(a -> a.redis().decisions()).sum(),
          apps.stream().mapToLong(a -> a.redis().flushes()).sum(),
          apps.stream()
              .mapToDouble(
                  a -> a.metrics().get("sendcap.batch.wait").timer().totalTime(TimeUnit.SECONDS))
              .sum(),
          configs.stream()
              .mapToInt(
                  c ->
                      Integer.parseInt(
                          c.streams().getProperty(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1")))
              .sum());
    } finally {
      progress.println("stopping the sendcap instance(s)");
      apps.forEach(SendcapApp::close);
    }
  }

  /** Runs the pass-through on topics of its own and an application id named with {@code prefix}. */
  private Run runPassthrough(
      String prefix, String bootstrap, BenchRedis redis, Path work, BlastDriver blast) {
    String input = prefix + PASSTHROUGH_INPUT;
    String output = prefix + PASSTHROUGH_OUTPUT;
    KafkaTopics.create(bootstrap, options.partitions(), List.of(input, output));
    return runPassthrough(
        configs(prefix + PASSTHROUGH_ID, bootstrap, redis, work, new Properties()),
        input,
        output,
        bootstrap,
        redis,
        blast);
  }

  private Run runPassthrough(
      List<SendcapConfig> configs,
      String input,
      String output,
      String bootstrap,
      BenchRedis redis,
      BlastDriver blast) {
    List<KafkaStreams> instances = new ArrayList<>();
    try {
      for (SendcapConfig config : configs) {
        KafkaStreams streams =
            new KafkaStreams(
                Passthrough.topology(input, output), SendcapTopology.streamsProperties(config));
        instances.add(streams);
        streams.start();
      }
      awaitRunning(instances.stream().<Supplier<KafkaStreams.State>>map(s -> s::state).toList());
      awaitSplit(configs.get(0).streams().getProperty("application.id"), input, bootstrap);
      return timed(
          "pass-through",
          configs.get(0).streams().getProperty("application.id"),
          input,
          List.of(output),
          new TopicCounts(),
          bootstrap,
          redis,
          blast);
    } finally {
      progress.println("stopping the pass-through instance(s)");
      instances.forEach(s -> s.close(CLOSE_TIMEOUT));
    }
  }

  /** Waits until the instances have split the input partitions between them, and says how. */
  private List<Integer> awaitSplit(String applicationId, String input, String bootstrap) {
    List<Integer> split =
        InputSplit.await(
            bootstrap,
            applicationId,
            input,
            options.partitions(),
            options.instances(),
            RUNNING_TIMEOUT);
    progress.printf("%s: %s partitions per instance: %s%n", applicationId, input, split);
    return split;
  }

  /**
   * Times one run: from producing the blast to {@code input} until one record per send has been
   * read from {@code outputs} into {@code counts}. The reader is opened before the clock starts.
   * The threads whose names hold {@code applicationId} are the application's.
   */
  private Run timed(
      String task,
      String applicationId,
      String input,
      List<String> outputs,
      TopicCounts counts,
      String bootstrap,
      BenchRedis redis,
      BlastDriver blast) {
    try (OutputReader reader = new OutputReader(bootstrap, outputs)) {
      double redisCpu = redis.cpuSeconds();
      ThreadCpu cpu = ThreadCpu.snapshot();
      long start = System.nanoTime();
      CompletableFuture<Long> produced = blast.produceAsync(bootstrap, input);
      blast.awaitOnePerSend(task, reader, counts, produced);
      long elapsedMs = (System.nanoTime() - start) / 1_000_000;
      ThreadCpu end = ThreadCpu.snapshot();
      return new Run(
          counts.total(),
          produced.join(),
          1,
          elapsedMs,
          (end.processCpuNanos() - cpu.processCpuNanos()) / 1e9,
          end.since(cpu, applicationId),
          end.compilationSecondsSince(cpu),
          redis.cpuSeconds() - redisCpu,
          end.minorFaultsSince(cpu));
    }
  }

  /**
   * Waits until every instance is {@code RUNNING}, so that start-up and the rebalances of joining
   * instances are not timed.
   */
  private static void awaitRunning(List<Supplier<KafkaStreams.State>> states) {
    long deadline = System.nanoTime() + RUNNING_TIMEOUT.toNanos();
    while (!states.stream().allMatch(s -> s.get() == KafkaStreams.State.RUNNING)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "Kafka Streams instances not all RUNNING within "
                + RUNNING_TIMEOUT.toSeconds()
                + " s: "
                + states.stream().map(Supplier::get).toList());
      }
      try {
        Thread.sleep(POLL_INTERVAL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while waiting for Kafka Streams", e);
      }
    }
  }
}
