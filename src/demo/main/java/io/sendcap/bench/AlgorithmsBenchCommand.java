package io.sendcap.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.config.Settings;
import io.sendcap.embedded.EmbeddedRedis;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sendcap bench algorithms}: the cap algorithms side by side on one embedded Redis. */
@Command(
    name = "algorithms",
    mixinStandardHelpOptions = true,
    description =
        "Runs the same workloads capped by each algorithm (sliding-log, sliding-window,"
            + " fixed-window, token-bucket) on one embedded Redis and prints, from that one run,"
            + " decisions/s, redis.call()s per decision, Redis memory per user and the worst"
            + " overshoot of a true sliding window.")
final class AlgorithmsBenchCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--sends",
      description = "Sends of the throughput workload (default: ${DEFAULT-VALUE}).")
  int sends = 1_000_000;

  @Option(names = "--users", description = "Users they go to (default: ${DEFAULT-VALUE}).")
  int users = 25_000;

  @Option(
      names = "--weeks",
      description =
          "Weeks they are spread over; sends after the first two are judged against true"
              + " windows (default: ${DEFAULT-VALUE}).")
  int weeks = 4;

  @Option(
      names = "--memory-users",
      description = "Users of the memory figures (default: ${DEFAULT-VALUE}).")
  int memoryUsers = 100_000;

  @Option(
      names = "--memory-sends",
      description = "Sends each of them gets (default: ${DEFAULT-VALUE}).")
  int memorySends = 5;

  @Option(
      names = "--burst-limit",
      description = "Limit per day of the boundary bursts' cap (default: ${DEFAULT-VALUE}).")
  int burstLimit = 10;

  @Option(names = "--batch", description = "Sends per pipelined batch (default: ${DEFAULT-VALUE}).")
  int batch = 1_000;

  @Option(
      names = "--sends-per-call",
      description =
          "Sends decided by one script call (cap.redis.sends-per-call; default: ${DEFAULT-VALUE}).")
  int sendsPerCall = Integer.parseInt(Settings.defaultOf("cap.redis.sends-per-call"));

  @Option(
      names = "--rounds",
      description =
          "Throughput runs of each algorithm, in turns whose order alternates; the best is"
              + " printed (default: ${DEFAULT-VALUE}).")
  int rounds = 2;

  @Option(names = "--json", description = "Also print the figures as one JSON line, last.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    AlgorithmsBench.Options options =
        new AlgorithmsBench.Options(
            sends, users, weeks, memoryUsers, memorySends, burstLimit, batch, sendsPerCall, rounds);
    List<AlgorithmsBench.Result> results;
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      results = new AlgorithmsBench(options, redis.uri(), System.err).run();
    }
    PrintWriter out = spec.commandLine().getOut();
    print(out, results);
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(summary(results)));
    }
    out.flush();
    return 0;
  }

  private void print(PrintWriter out, List<AlgorithmsBench.Result> results) {
    out.printf(
        "%nalgorithms: %,d sends over %,d users and %d weeks, caps 2 per 1d and 5 per 7d,"
            + " %d sends per call; allowed sends judged from week 3; best of %d rounds%n",
        sends, users, weeks, sendsPerCall, rounds);
    out.printf(
        "memory: %,d users with %d sends each (cap %d per 7d), 1 h apart (every id kept)"
            + " or 25 h apart (ids are kept 1 day)%n",
        memoryUsers, memorySends, 2 * memorySends);
    out.printf(
        "bursts: cap %d per 1d; %d sends 1 ms before a day starts, %d at its start,"
            + " then one every %.1f s for two days%n%n",
        burstLimit,
        burstLimit,
        burstLimit,
        AlgorithmsBench.BURST_WINDOW.toMillis() / 1000.0 / AlgorithmsBench.BURST_STEPS);
    String columns = "%-15s %11s %9s %10s %8s %10s %11s %11s %10s%n";
    out.printf(
        columns,
        "",
        "decisions/s",
        "Redis CPU",
        "redis.call",
        "allowed",
        "over the",
        "bytes/user",
        "bytes/user",
        "overshoot");
    out.printf(
        columns,
        "algorithm",
        "",
        "µs/dec.",
        "/decision",
        "",
        "limit",
        "1 h apart",
        "25 h apart",
        "bursts");
    for (AlgorithmsBench.Result r : results) {
      out.printf(
          "%-15s %,11.0f %9.1f %10.2f %7.1f%% %9.2f%% %,11.0f %,11.0f %10.2f%n",
          r.algorithm().key(),
          r.decisionsPerS(),
          r.cpuPerDecision(),
          r.callsPerDecision(),
          100 * r.uniform().share(),
          100 * r.uniform().overLimit(),
          r.bytesPerUserClose(),
          r.bytesPerUserApart(),
          r.burstOvershoot());
    }
  }

  private Map<String, Object> summary(List<AlgorithmsBench.Result> results) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("sends", sends);
    m.put("users", users);
    m.put("weeks", weeks);
    m.put("sends_per_call", sendsPerCall);
    m.put("rounds", rounds);
    m.put("memory_users", memoryUsers);
    m.put("memory_sends", memorySends);
    m.put("burst_limit", burstLimit);
    Map<String, Object> algorithms = new LinkedHashMap<>();
    for (AlgorithmsBench.Result r : results) {
      Map<String, Object> a = new LinkedHashMap<>();
      a.put("decisions_per_s", Math.round(r.decisionsPerS()));
      a.put("redis_cpu_us_per_decision", round2(r.cpuPerDecision()));
      a.put("redis_calls_per_decision", round2(r.callsPerDecision()));
      a.put("allowed_share", round4(r.uniform().share()));
      a.put("over_limit_share", round4(r.uniform().overLimit()));
      a.put("overshoot_uniform", round2(r.uniform().worstOvershoot()));
      a.put("bytes_per_user_sends_1h_apart", Math.round(r.bytesPerUserClose()));
      a.put("bytes_per_user_sends_25h_apart", Math.round(r.bytesPerUserApart()));
      a.put("overshoot_bursts", round2(r.burstOvershoot()));
      algorithms.put(r.algorithm().key(), a);
    }
    m.put("algorithms", algorithms);
    return m;
  }

  private static double round2(double v) {
    return Math.round(v * 100) / 100.0;
  }

  private static double round4(double v) {
    return Math.round(v * 10_000) / 10_000.0;
  }
}
