package io.sendcap.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.blast.BlastOptions;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.ToDoubleFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sendcap bench pipeline}: capped end-to-end throughput against a pass-through topology. */
@Command(
    name = "pipeline",
    mixinStandardHelpOptions = true,
    description =
        "Blasts generated sends through sendcap (the production topology, exactly-once) and then"
            + " the same records through a pass-through Kafka Streams topology on the same embedded"
            + " broker, and prints both throughputs and their ratio.")
final class PipelineBenchCommand implements Callable<Integer> {
  private static final Map<ThreadCpu.Share, String> SHARES =
      Map.of(
          ThreadCpu.Share.STREAM_THREADS, "the application's stream threads",
          ThreadCpu.Share.OTHER_APP_THREADS, "its Kafka clients' and other threads",
          ThreadCpu.Share.REDIS_CLIENT, "its Lettuce threads (Redis client)",
          ThreadCpu.Share.JIT_COMPILER, "JIT compiler",
          ThreadCpu.Share.GARBAGE_COLLECTOR, "garbage collector",
          ThreadCpu.Share.REST, "broker, blast producer, reader, rest");

  @Spec CommandSpec spec;

  @Mixin BlastOptions blast;

  @Option(
      names = "--instances",
      description =
          "Application instances of each run, in this JVM, sharing the partitions (default:"
              + " ${DEFAULT-VALUE}).")
  int instances = 1;

  @Option(
      names = "--redis-cluster-nodes",
      description =
          "0 for one standalone embedded Redis, or the masters of an embedded Redis Cluster, at"
              + " least 3 (default: ${DEFAULT-VALUE}).")
  int redisClusterNodes = 0;

  @Option(
      names = "--redis-replicas",
      description =
          "Replicas of each master of the Redis Cluster (default: ${DEFAULT-VALUE}); their CPU is"
              + " counted with the masters'.")
  int redisReplicas = 0;

  @Option(
      names = "--wait-replicas",
      description =
          "cap.redis.wait-replicas of the capped run: after each batch, WAIT for this many"
              + " replicas of each master (default: ${DEFAULT-VALUE}).")
  int waitReplicas = 0;

  @Option(
      names = "--warm-up-sends",
      description =
          "Sends blasted through both pipelines, untimed, before the timed runs, so that these"
              + " pay less of the JIT compiler's work, which goes on for minutes (default: a fifth"
              + " of --sends; 0: none).")
  int warmUpSends = -1;

  @Option(names = "--json", description = "Also print the figures as one JSON line, last.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    validate();
    long start = System.nanoTime();
    PipelineBench.Options options =
        new PipelineBench.Options(
            blast.sends(),
            blast.users(),
            blast.partitions(),
            instances,
            redisClusterNodes,
            redisReplicas,
            waitReplicas,
            blast.seed(),
            blast.policies(),
            warmUpSends());
    PipelineBench.Result r = new PipelineBench(options, System.err).run();
    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
    PrintWriter out = spec.commandLine().getOut();
    print(out, r);
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(summary(r, elapsedMs)));
    }
    out.flush();
    return accountedFor(r) ? 0 : 1;
  }

  private int warmUpSends() {
    return warmUpSends >= 0 ? warmUpSends : blast.sends() / 5;
  }

  private void validate() {
    blast.validate(spec);
    if (instances < 1) {
      throw new ParameterException(spec.commandLine(), "--instances must be positive");
    }
    if (redisClusterNodes != 0 && redisClusterNodes < BenchRedis.MIN_CLUSTER_NODES) {
      throw new ParameterException(
          spec.commandLine(),
          "--redis-cluster-nodes must be 0 (standalone) or at least "
              + BenchRedis.MIN_CLUSTER_NODES
              + ", was "
              + redisClusterNodes);
    }
    if (redisReplicas < 0 || (redisReplicas > 0 && redisClusterNodes == 0)) {
      throw new ParameterException(
          spec.commandLine(),
          "--redis-replicas must be 0, or positive with --redis-cluster-nodes, was "
              + redisReplicas);
    }
    if (waitReplicas < 0 || waitReplicas > redisReplicas) {
      throw new ParameterException(
          spec.commandLine(),
          "--wait-replicas must be from 0 to --redis-replicas ("
              + redisReplicas
              + "), was "
              + waitReplicas);
    }
  }

  /** Whether every send came out of each run once, from the same input bytes. */
  private boolean accountedFor(PipelineBench.Result r) {
    return r.capped().run().records() == blast.sends()
        && r.passthrough().records() == blast.sends()
        && r.capped().run().inputBytes() == r.passthrough().inputBytes();
  }

  private void print(PrintWriter out, PipelineBench.Result r) {
    PipelineBench.Run capped = r.capped().run();
    PipelineBench.Run passthrough = r.passthrough();
    PipelineBench.Capped c = r.capped();
    out.printf(
        "%npipeline: %,d sends over %,d users, %d partitions, %d instance(s), %s, exactly-once,"
            + " after a warm-up of %,d sends through each%n",
        blast.sends(), blast.users(), blast.partitions(), instances, r.redis(), warmUpSends());
    both(out, "", "capped", "pass-through");
    both(
        out,
        "records/s, first produced to last read",
        whole(capped.perSecond()),
        whole(passthrough.perSecond()));
    both(out, "elapsed, s", seconds(capped.elapsedMs()), seconds(passthrough.elapsedMs()));
    both(
        out,
        "JVM CPU per record, us",
        oneDecimal(capped.jvmCpuMicrosPerRecord()),
        oneDecimal(passthrough.jvmCpuMicrosPerRecord()));
    for (ThreadCpu.Share share : ThreadCpu.Share.values()) {
      both(
          out,
          "  " + SHARES.get(share),
          oneDecimal(capped.cpuMicrosPerRecord(share)),
          oneDecimal(passthrough.cpuMicrosPerRecord(share)));
    }
    both(
        out,
        "JVM CPU per record, 1st / 2nd run, us",
        eachRun(r.cappedRuns(), PipelineBench.Run::jvmCpuMicrosPerRecord),
        eachRun(r.passthroughRuns(), PipelineBench.Run::jvmCpuMicrosPerRecord));
    both(
        out,
        "  the JIT compiler's, 1st / 2nd run",
        eachRun(r.cappedRuns(), run -> run.cpuMicrosPerRecord(ThreadCpu.Share.JIT_COMPILER)),
        eachRun(r.passthroughRuns(), run -> run.cpuMicrosPerRecord(ThreadCpu.Share.JIT_COMPILER)));
    both(
        out,
        "JVM CPU per record without the JIT, us",
        oneDecimal(capped.jvmCpuWithoutJitMicrosPerRecord()),
        oneDecimal(passthrough.jvmCpuWithoutJitMicrosPerRecord()));
    both(
        out,
        "application threads' CPU per record, us",
        oneDecimal(capped.appCpuMicrosPerRecord()),
        oneDecimal(passthrough.appCpuMicrosPerRecord()));
    out.println("  the application's threads: stream threads, their Kafka clients, Lettuce");
    both(
        out,
        "JIT compilation during the run, s",
        oneDecimal(capped.compilationSeconds()),
        oneDecimal(passthrough.compilationSeconds()));
    both(
        out,
        "Redis CPU per record, us",
        oneDecimal(capped.redisCpuMicrosPerRecord()),
        oneDecimal(passthrough.redisCpuMicrosPerRecord()));
    both(
        out,
        "JVM cores busy (CPU s per s)",
        twoDecimals(capped.jvmCores()),
        twoDecimals(passthrough.jvmCores()));
    both(
        out,
        "Redis cores busy (CPU s per s)",
        twoDecimals(capped.redisCores()),
        twoDecimals(passthrough.redisCores()));
    out.println("  CPU per record = cores busy / records per second");
    both(
        out,
        "JVM minor page faults per 1,000 records",
        oneDecimal(capped.minorFaultsPerThousandRecords()),
        oneDecimal(passthrough.minorFaultsPerThousandRecords()));
    out.println(
        "  memory touched for the first time (a growing heap): kernel CPU in the figures above");
    both(
        out,
        "records read from the output topics",
        whole(capped.records()),
        whole(passthrough.records()));
    both(
        out,
        "input bytes (keys and values)",
        whole(capped.inputBytes()),
        whole(passthrough.inputBytes()));
    row(out, "input partitions per sendcap instance", splitOf(c));
    row(out, "  allowed", whole(c.allowed()));
    row(out, "  suppressed", whole(c.suppressed()));
    row(out, "  dead letters (DLQ)", whole(c.deadLetters()));
    row(out, "sends decided per Redis round trip", oneDecimal(r.capped().decisionsPerRoundTrip()));
    row(out, "script calls per Redis round trip", oneDecimal(r.capped().callsPerRoundTrip()));
    // the bars of DESIGN.md's performance section, on standalone Redis and on a cluster of masters
    // (whose CPU is added up); with replicas, theirs is added too, and no bar applies
    boolean cluster = redisClusterNodes > 0;
    row(
        out,
        "sends decided per script call",
        oneDecimal(r.capped().decisionsPerCall()),
        cluster ? "target >= 8" : "");
    row(
        out,
        "Redis CPU per decision, us",
        oneDecimal(r.capped().redisCpuMicrosPerDecision()),
        redisReplicas > 0 ? "" : cluster ? "target <= 15" : "target <= 10");
    row(
        out,
        "stream threads waiting for Redis, % of run",
        oneDecimal(r.capped().limiterWaitShare() * 100));
    if (redisClusterNodes > 0) {
      out.println(
          "  a round trip here is one pipelined flush: one request to each master, at once");
    }
    row(out, "peak heap, MB (sum of pool peaks)", megabytes(r.memory().heapBytes()));
    row(out, "peak RSS, MB (VmHWM)", megabytes(r.memory().rssBytes()));
    out.println("  memory is of the one JVM that ran the broker, every instance of both runs,");
    out.println("  the producer and the readers; Redis runs in processes of its own");
    out.println();
    row(out, "capped / pass-through", twoDecimals(r.ratio()), "target >= 0.5");
    row(out, "JVM CPU per record, capped / p-t", twoDecimals(r.jvmCpuRatio()), "target <= 2.0");
    row(out, "the same without the JIT compiler's", twoDecimals(r.jvmCpuRatioWithoutJit()));
    row(
        out,
        "application threads' CPU, capped / p-t",
        twoDecimals(capped.appCpuMicrosPerRecord() / passthrough.appCpuMicrosPerRecord()));
  }

  private static void both(PrintWriter out, String label, String capped, String passthrough) {
    out.printf("%-40s %14s %14s%n", label, capped, passthrough);
  }

  /** A figure of each timed run of one pipeline, in the order they ran: "first / second". */
  private static String eachRun(
      List<PipelineBench.Run> runs, ToDoubleFunction<PipelineBench.Run> figure) {
    return String.join(
        " / ", runs.stream().map(run -> oneDecimal(figure.applyAsDouble(run))).toList());
  }

  private static String whole(double v) {
    return String.format("%,.0f", v);
  }

  private static String seconds(long ms) {
    return String.format("%.1f", ms / 1000.0);
  }

  private static String splitOf(PipelineBench.Capped c) {
    return String.join(" + ", c.split().stream().map(String::valueOf).toList());
  }

  private static void row(PrintWriter out, String label, String value) {
    row(out, label, value, "");
  }

  private static void row(PrintWriter out, String label, String value, String target) {
    out.printf(target.isEmpty() ? "%-40s %14s%n" : "%-40s %14s  %s%n", label, value, target);
  }

  private static double round1(double v) {
    return Math.round(v * 10) / 10.0;
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }

  /** {@code v} to one decimal; null (JSON's null) for NaN, a figure that could not be measured. */
  private static Double round1OrNull(double v) {
    return Double.isNaN(v) ? null : round1(v);
  }

  private static String oneDecimal(double v) {
    return Double.isNaN(v) ? "n/a" : String.format("%.1f", v);
  }

  private static String twoDecimals(double v) {
    return String.format("%.2f", v);
  }

  private static String megabytes(long bytes) {
    return bytes < 0 ? "not measured" : whole(bytes / 1e6);
  }

  private static Map<String, Double> byShare(PipelineBench.Run run) {
    Map<String, Double> m = new LinkedHashMap<>();
    for (ThreadCpu.Share share : ThreadCpu.Share.values()) {
      m.put(share.name().toLowerCase(Locale.ROOT), round1(run.cpuMicrosPerRecord(share)));
    }
    return m;
  }

  private Map<String, Object> summary(PipelineBench.Result r, long elapsedMs) {
    PipelineBench.Run capped = r.capped().run();
    PipelineBench.Capped c = r.capped();
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("sends", blast.sends());
    m.put("users", blast.users());
    m.put("partitions", blast.partitions());
    m.put("instances", instances);
    m.put("redis_cluster_nodes", redisClusterNodes);
    m.put("redis_replicas", redisReplicas);
    m.put("wait_replicas", waitReplicas);
    m.put("partitions_per_instance", c.split());
    m.put("capped_per_s", Math.round(capped.perSecond()));
    m.put("passthrough_per_s", Math.round(r.passthrough().perSecond()));
    m.put("ratio", round2(r.ratio()));
    m.put("jvm_cpu_ratio", round2(r.jvmCpuRatio()));
    m.put("jvm_cpu_ratio_without_jit", round2(r.jvmCpuRatioWithoutJit()));
    m.put("capped_elapsed_ms", capped.elapsedMs());
    m.put("passthrough_elapsed_ms", r.passthrough().elapsedMs());
    m.put("capped_jvm_cpu_us_per_record", round1(capped.jvmCpuMicrosPerRecord()));
    m.put("capped_redis_cpu_us_per_record", round1(capped.redisCpuMicrosPerRecord()));
    m.put("passthrough_jvm_cpu_us_per_record", round1(r.passthrough().jvmCpuMicrosPerRecord()));
    m.put("capped_jvm_cores", round2(capped.jvmCores()));
    m.put("passthrough_jvm_cores", round2(r.passthrough().jvmCores()));
    m.put("capped_redis_cores", round2(capped.redisCores()));
    m.put("capped_app_cpu_us_per_record", round1(capped.appCpuMicrosPerRecord()));
    m.put("passthrough_app_cpu_us_per_record", round1(r.passthrough().appCpuMicrosPerRecord()));
    m.put("capped_jvm_cpu_us_per_record_by_share", byShare(capped));
    m.put("capped_jit_compilation_s", round1(capped.compilationSeconds()));
    m.put("passthrough_jit_compilation_s", round1(r.passthrough().compilationSeconds()));
    m.put("passthrough_jvm_cpu_us_per_record_by_share", byShare(r.passthrough()));
    m.put(
        "capped_minor_faults_per_1000_records",
        round1OrNull(capped.minorFaultsPerThousandRecords()));
    m.put(
        "passthrough_minor_faults_per_1000_records",
        round1OrNull(r.passthrough().minorFaultsPerThousandRecords()));
    m.put(
        "capped_jvm_cpu_us_per_record_without_jit",
        round1(capped.jvmCpuWithoutJitMicrosPerRecord()));
    m.put(
        "passthrough_jvm_cpu_us_per_record_without_jit",
        round1(r.passthrough().jvmCpuWithoutJitMicrosPerRecord()));
    m.put("allowed", c.allowed());
    m.put("suppressed", c.suppressed());
    m.put("dlq", c.deadLetters());
    m.put("passthrough_records", r.passthrough().records());
    m.put("input_bytes", capped.inputBytes());
    m.put("decisions_per_round_trip", round1(r.capped().decisionsPerRoundTrip()));
    m.put("calls_per_round_trip", round1(r.capped().callsPerRoundTrip()));
    m.put("redis_round_trips", r.capped().redisFlushes());
    m.put("decisions_per_call", round1(r.capped().decisionsPerCall()));
    m.put("redis_cpu_us_per_decision", round1(r.capped().redisCpuMicrosPerDecision()));
    m.put("capped_limiter_wait_share", round2(r.capped().limiterWaitShare()));
    m.put("peak_heap_bytes", r.memory().heapBytes());
    m.put("max_heap_bytes", r.memory().maxHeapBytes());
    m.put("peak_rss_bytes", r.memory().rssBytes());
    m.put("warm_up_sends", warmUpSends());
    m.put("elapsed_ms", elapsedMs);
    return m;
  }
}
