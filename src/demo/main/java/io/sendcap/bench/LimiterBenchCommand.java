package io.sendcap.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.config.Settings;
import io.sendcap.embedded.EmbeddedRedis;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sendcap bench limiter}: the limiter's throughput and memory against one Redis. */
@Command(
    name = "limiter",
    mixinStandardHelpOptions = true,
    description =
        "Decides one workload (caps 2 a day and 5 a week) with sendcap's script pipelined, at the"
            + " server's ceiling, one send at a time, and with the seed script, and measures Redis"
            + " memory per user; on an embedded Redis unless --redis-uri is given.")
final class LimiterBenchCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--sends", description = "Sends of the workload (default: ${DEFAULT-VALUE}).")
  int sends = 1_000_000;

  @Option(names = "--users", description = "Users they go to (default: ${DEFAULT-VALUE}).")
  int users = 100_000;

  @Option(
      names = "--one-at-a-time-sends",
      description = "Sends decided one round trip each (default: ${DEFAULT-VALUE}).")
  int oneAtATime = 50_000;

  @Option(
      names = "--peer-sends",
      description = "Sends decided by each peer library (default: ${DEFAULT-VALUE}).")
  int peerSends = 50_000;

  @Option(
      names = "--memory-users",
      description = "Users holding 5 sends for the memory figure (default: ${DEFAULT-VALUE}).")
  int memoryUsers = 100_000;

  @Option(names = "--batch", description = "Sends per pipelined batch (default: ${DEFAULT-VALUE}).")
  int batch = 1_000;

  @Option(
      names = "--sends-per-call",
      description =
          "Sends decided by one script call (cap.redis.sends-per-call; default: ${DEFAULT-VALUE}).")
  int sendsPerCall = Integer.parseInt(Settings.defaultOf("cap.redis.sends-per-call"));

  @Option(
      names = "--depth",
      description =
          "Commands in flight on each connection for the ceilings (default: ${DEFAULT-VALUE}).")
  int depth = 64;

  @Option(
      names = "--connections",
      description =
          "Connections driving Redis at once for the ceilings (default: ${DEFAULT-VALUE}).")
  int connections = 4;

  @Option(
      names = "--redis-uri",
      description = "A Redis to use instead of an embedded one; it is flushed (needs --yes-flush).")
  String redisUri;

  @Option(names = "--yes-flush", description = "Allow FLUSHALL on the Redis of --redis-uri.")
  boolean yesFlush;

  @Option(names = "--json", description = "Also print the figures as one JSON line, last.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    if (redisUri != null && !yesFlush) {
      throw new ParameterException(
          spec.commandLine(), "--redis-uri: the bench runs FLUSHALL there; add --yes-flush");
    }
    LimiterBench.Options options =
        new LimiterBench.Options(
            sends,
            users,
            oneAtATime,
            peerSends,
            memoryUsers,
            batch,
            sendsPerCall,
            depth,
            connections);
    LimiterBench.Result r;
    if (redisUri != null) {
      r = new LimiterBench(options, redisUri, System.err).run();
    } else {
      try (EmbeddedRedis redis = EmbeddedRedis.start()) {
        r = new LimiterBench(options, redis.uri(), System.err).run();
      }
    }
    PrintWriter out = spec.commandLine().getOut();
    print(out, r);
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(summary(r)));
    }
    out.flush();
    return 0;
  }

  private void print(PrintWriter out, LimiterBench.Result r) {
    out.printf("%nlimiter: %,d sends over %,d users, caps 2/day and 5/week%n", sends, users);
    row(out, "sendcap pipelined", r.pipelined().perS());
    busy(out, r.pipelined());
    row(out, "  sends per round trip", r.decisionsPerRoundTrip());
    row(out, "ceiling of sendcap's script", r.ceilingPerS());
    out.printf(
        "  (1 s of Redis CPU / %.2f us, the cheaper of the pipelined and saturating runs)%n",
        1e6 / r.ceilingPerS());
    row(out, "  saturating run", r.saturating().perS());
    busy(out, r.saturating());
    row(out, "one send at a time", r.oneAtATimePerS());
    ceiling(out, "ceiling, sendcap's script, 1 per call", r.onePerCall());
    ceiling(out, "ceiling of the seed script (1 per call)", r.seed());
    peer(out, "Bucket4j (Lettuce), one per send", r.bucket4jPerS());
    peer(out, "Redisson RRateLimiter (2/day only)", r.redissonPerS());
    row(out, "Redis bytes per user (5 sends)", r.bytesPerUser());
    row(out, "  MEMORY USAGE of one such key", r.sampleKeyBytes());
    out.printf(
        "Redis CPU per decision, us (INFO cpu, during each ceiling run, %d connections x %d):%n",
        connections, depth);
    row(out, "  sendcap, " + sendsPerCall + " sends per call", r.saturating().redisCpuMicros());
    row(out, "  sendcap, 1 send per call", r.onePerCall().redisCpuMicros());
    row(out, "  seed script, 1 send per call", r.seed().redisCpuMicros());
    out.println();
    ratio(out, "pipelined / ceiling", r.pipelined().perS() / r.ceilingPerS(), ">= 0.9");
    if (r.ceilingBelowPipelined()) {
      out.println(
          "  BROKEN MEASUREMENT: the ceiling is below the pipelined figure, so it bounds nothing");
    }
    ratio(out, "pipelined / one at a time", r.pipelined().perS() / r.oneAtATimePerS(), ">= 4");
    // like for like: both scripts' capacities as measured by the same saturating client
    ratio(out, "sendcap ceiling / seed ceiling", scriptVsSeed(r), ">= 1.0");
    ratio(
        out,
        "seed / sendcap, Redis CPU per decision",
        r.seed().redisCpuMicros() / r.saturating().redisCpuMicros(),
        ">= 1.0");
    out.printf(
        "%-40s %14d  target <= 220 on Redis 7.0%n", "bytes per user", (long) r.bytesPerUser());
  }

  private static void row(PrintWriter out, String label, double value) {
    out.printf("%-40s %,14.1f%n", label, value);
  }

  /**
   * A ceiling (decisions per second of Redis CPU), then what its saturating run measured and how
   * busy it kept Redis.
   */
  private static void ceiling(PrintWriter out, String label, LimiterBench.Run c) {
    row(out, label, c.capacity());
    row(
        out,
        String.format("  measured, Redis busy %.0f%% of the run", 100 * c.redisBusy()),
        c.perS());
  }

  /** How busy a run kept Redis, and what each decision cost it. */
  private static void busy(PrintWriter out, LimiterBench.Run run) {
    out.printf(
        "  Redis busy %.0f%% of the run, %.2f us of its CPU per decision%n",
        100 * run.redisBusy(), run.redisCpuMicros());
  }

  private static void peer(PrintWriter out, String label, Double value) {
    if (value == null) {
      out.printf("%-40s %14s%n", label, "not measured");
    } else {
      row(out, label, value);
    }
  }

  private static void ratio(PrintWriter out, String label, double value, String target) {
    out.printf("%-40s %14.2f  target %s%n", label, value, target);
  }

  private static Map<String, Object> summary(LimiterBench.Result r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("pipelined_per_s", Math.round(r.pipelined().perS()));
    m.put("pipelined_redis_busy", round2(r.pipelined().redisBusy()));
    m.put("ceiling_per_s", Math.round(r.ceilingPerS()));
    m.put("ceiling_measured_per_s", Math.round(r.saturating().perS()));
    m.put("ceiling_redis_busy", round2(r.saturating().redisBusy()));
    m.put("one_at_a_time_per_s", Math.round(r.oneAtATimePerS()));
    m.put("seed_ceiling_per_s", Math.round(r.seed().capacity()));
    m.put("one_per_call_ceiling_per_s", Math.round(r.onePerCall().capacity()));
    m.put("bucket4j_per_s", rounded(r.bucket4jPerS()));
    m.put("redisson_per_s", rounded(r.redissonPerS()));
    m.put("bytes_per_user", Math.round(r.bytesPerUser()));
    m.put("pipelined_vs_ceiling", round2(r.pipelined().perS() / r.ceilingPerS()));
    m.put("ceiling_below_pipelined", r.ceilingBelowPipelined());
    m.put("pipelined_vs_one_at_a_time", round2(r.pipelined().perS() / r.oneAtATimePerS()));
    m.put("script_vs_seed", round2(scriptVsSeed(r)));
    m.put("redis_cpu_us_per_decision", round2(r.saturating().redisCpuMicros()));
    m.put("pipelined_redis_cpu_us_per_decision", round2(r.pipelined().redisCpuMicros()));
    m.put("one_per_call_redis_cpu_us_per_decision", round2(r.onePerCall().redisCpuMicros()));
    m.put("seed_redis_cpu_us_per_decision", round2(r.seed().redisCpuMicros()));
    return m;
  }

  /** sendcap's script's capacity over the seed's, both from their saturating runs. */
  private static double scriptVsSeed(LimiterBench.Result r) {
    return r.saturating().capacity() / r.seed().capacity();
  }

  private static Long rounded(Double v) {
    return v == null ? null : Math.round(v);
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }
}
