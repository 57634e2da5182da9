package io.sendcap.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.Decision;
import io.sendcap.limit.RedisConnector;
import io.sendcap.limit.RedisSlidingLog;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * The algorithms benchmark: the same workloads capped by each {@link Cap.Algorithm} in turn, on one
 * Redis, in one run: throughput, the commands the script runs per decision, Redis memory per user,
 * and how far each lets more sends through than a true sliding window would.
 */
final class AlgorithmsBench {
  /** What to run. */
  record Options(
      int sends,
      int users,
      int weeks,
      int memoryUsers,
      int memorySends,
      int burstLimit,
      int batch,
      int sendsPerCall,
      int rounds) {}

  /**
   * One algorithm's figures.
   *
   * @param decisionsPerS pipelined decisions per second on the throughput workload, the best of its
   *     rounds
   * @param cpuPerDecision Redis's CPU time per decision in µs (INFO cpu), steadier than the rate on
   *     a machine shared with other work
   * @param callsPerDecision commands the script ran (its {@code redis.call()}s) per decision
   * @param uniform what was allowed of the throughput workload, judged over its last two weeks
   * @param bytesPerUserClose Redis memory per user holding sends an hour apart (their ids all kept)
   * @param bytesPerUserApart the same with sends 25 hours apart (only the newest id kept)
   * @param burstOvershoot the most allowed sends in any true window of the cap's length, over its
   *     limit, on the adversarial bursts at window boundaries
   */
  record Result(
      Cap.Algorithm algorithm,
      double decisionsPerS,
      double cpuPerDecision,
      double callsPerDecision,
      Allowed uniform,
      double bytesPerUserClose,
      double bytesPerUserApart,
      double burstOvershoot) {}

  /**
   * What an algorithm allowed of a workload, judged by true sliding windows of its caps.
   *
   * @param share the sends allowed, over all sends
   * @param overLimit the allowed sends that took a true window of a cap's length (the one ending at
   *     the send) over the cap's limit, over the allowed sends judged
   * @param worstOvershoot the most allowed sends in a true window of a cap's length ending at a
   *     judged send, over its limit, over every user and cap
   */
  record Allowed(double share, double overLimit, double worstOvershoot) {}

  /** How long every counter is given to fill its previous bucket before sends are judged. */
  static final Duration WARM_UP = Duration.ofDays(14);

  /** The window of the burst cap. */
  static final Duration BURST_WINDOW = Duration.ofDays(1);

  /** The attempts per window that follow the bursts. */
  static final int BURST_STEPS = 1000;

  private static final long HOUR = Duration.ofHours(1).toMillis();

  private final Options options;
  private final String uri;
  private final PrintStream progress;

  AlgorithmsBench(Options options, String uri, PrintStream progress) {
    this.options = options;
    this.uri = uri;
    this.progress = progress;
  }

  /** The throughput workload's policy: 2 per day and 5 per week, both counted by {@code a}. */
  static Policy policy(Cap.Algorithm a) {
    return new Policy(
        a.key(),
        List.of(new Cap("1d", Duration.ofDays(1), 2, a), new Cap("7d", Duration.ofDays(7), 5, a)),
        Duration.ZERO);
  }

  /** Measures every algorithm, in declaration order. */
  List<Result> run() {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> admin = client.connect();
        RedisConnector connector = RedisConnector.connect(settings())) {
      RedisCommands<String, String> redis = admin.sync();
      Map<Cap.Algorithm, Throughput> best = new EnumMap<>(Cap.Algorithm.class);
      List<Cap.Algorithm> order = new ArrayList<>(List.of(Cap.Algorithm.values()));
      for (int round = 0; round < options.rounds(); round++) {
        for (Cap.Algorithm a : order) {
          best.merge(a, throughput(a, round, redis, connector), Throughput::better);
        }
        Collections.reverse(order);
      }
      List<Result> results = new ArrayList<>();
      for (Cap.Algorithm a : Cap.Algorithm.values()) {
        results.add(measure(a, best.get(a), redis, connector));
      }
      return results;
    } finally {
      client.shutdown();
    }
  }

  /** One run of the throughput workload; what it allowed is the same in every run. */
  private record Throughput(double rate, double cpu, double calls, Allowed allowed) {
    /** The faster rate and the lesser CPU time of two runs: interference only slows a run. */
    Throughput better(Throughput other) {
      return new Throughput(Math.max(rate, other.rate), Math.min(cpu, other.cpu), calls, allowed);
    }
  }

  private Throughput throughput(
      Cap.Algorithm a, int round, RedisCommands<String, String> redis, RedisConnector connector) {
    List<CapRequest> work =
        LimiterBench.workload(
            options.sends(), options.users(), Duration.ofDays(7L * options.weeks()), policy(a));
    progress.println(
        a.key()
            + ", round "
            + (round + 1)
            + ": "
            + work.size()
            + " sends in batches of "
            + options.batch());
    List<Decision> decisions = new ArrayList<>(work.size());
    try (RedisSlidingLog log = connector.open()) {
      redis.flushall();
      LimiterBench.decideAll(log, work.subList(0, work.size() / 10), options.batch(), d -> {});
      redis.flushall();
      redis.configResetstat();
      double cpuBefore = cpuSeconds(redis);
      long start = System.nanoTime();
      LimiterBench.decideAll(log, work, options.batch(), decisions::addAll);
      double rate = work.size() * 1e9 / (System.nanoTime() - start);
      double cpu = (cpuSeconds(redis) - cpuBefore) * 1e6 / work.size();
      double calls = (double) commandsRunByScripts(redis) / work.size();
      Allowed allowed = allowed(work, decisions, policy(a), LimiterBench.T0 + WARM_UP.toMillis());
      return new Throughput(rate, cpu, calls, allowed);
    }
  }

  private Result measure(
      Cap.Algorithm a,
      Throughput throughput,
      RedisCommands<String, String> redis,
      RedisConnector connector) {
    progress.println(a.key() + ": memory of " + options.memoryUsers() + " users");
    double close = bytesPerUser(a, HOUR, redis, connector);
    double apart = bytesPerUser(a, 25 * HOUR, redis, connector);
    progress.println(a.key() + ": bursts at window boundaries");
    double burst = burstOvershoot(a, redis, connector);
    return new Result(
        a,
        throughput.rate(),
        throughput.cpu(),
        throughput.calls(),
        throughput.allowed(),
        close,
        apart,
        burst);
  }

  private SendcapConfig.Limiter settings() {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", uri);
    p.setProperty("cap.redis.timeout.ms", "60000");
    // no Kafka transaction here for a batch's time to stay inside
    p.setProperty("processing.guarantee", "at_least_once");
    p.setProperty("cap.redis.sends-per-call", String.valueOf(options.sendsPerCall()));
    return SendcapConfig.from(p, "bench").limiter();
  }

  /** The CPU time the server has used, user and system, from INFO cpu. */
  static double cpuSeconds(RedisCommands<String, String> redis) {
    return redis
        .info("cpu")
        .lines()
        .filter(l -> l.startsWith("used_cpu_user:") || l.startsWith("used_cpu_sys:"))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(':') + 1).trim()))
        .sum();
  }

  /** The calls of INFO commandstats since the reset, but for EVALSHA itself and CONFIG. */
  private static long commandsRunByScripts(RedisCommands<String, String> redis) {
    return redis
        .info("commandstats")
        .lines()
        .filter(l -> l.startsWith("cmdstat_"))
        .filter(l -> !l.startsWith("cmdstat_evalsha:") && !l.startsWith("cmdstat_config"))
        .mapToLong(l -> Long.parseLong(l.replaceFirst(".*:calls=(\\d+),.*", "$1")))
        .sum();
  }

  /**
   * Redis memory per user: {@code used_memory} after {@code memoryUsers} users were each sent
   * {@code memorySends} sends {@code spacing} ms apart, less before, divided by the users. The cap
   * (twice as many per week) lets every send through; the ids are kept for the default retention of
   * one day.
   */
  private double bytesPerUser(
      Cap.Algorithm a,
      long spacing,
      RedisCommands<String, String> redis,
      RedisConnector connector) {
    int users = options.memoryUsers();
    Cap roomy = new Cap("7d", Duration.ofDays(7), 2 * options.memorySends(), a);
    Policy policy = new Policy("memory", List.of(roomy), Duration.ZERO);
    List<CapRequest> work = new ArrayList<>();
    for (int k = 0; k < options.memorySends(); k++) {
      for (int u = 0; u < users; u++) {
        work.add(new CapRequest(u, "u" + u + "-" + k, LimiterBench.T0 + k * spacing, policy));
      }
    }
    redis.flushall();
    long before = LimiterBench.usedMemory(redis);
    try (RedisSlidingLog log = connector.open()) {
      LimiterBench.decideAll(log, work, options.batch(), AlgorithmsBench::requireAllowed);
    }
    return (double) (LimiterBench.usedMemory(redis) - before) / users;
  }

  private static void requireAllowed(List<Decision> decisions) {
    if (!decisions.stream().allMatch(Decision::allowed)) {
      throw new IllegalStateException("a send of the memory workload was capped");
    }
  }

  /**
   * The adversary of window boundaries, for one user under {@code limit} per {@link #BURST_WINDOW}:
   * {@code limit} sends one millisecond before a window (a day, aligned to the epoch) starts,
   * {@code limit} at its start, then one every {@link #BURST_STEPS}-th of the window for two
   * windows. A fixed window takes both bursts; the others let through what they allow after them.
   */
  static List<CapRequest> bursts(Policy policy, int limit) {
    long window = BURST_WINDOW.toMillis();
    long boundary = (LimiterBench.T0 / window + 1) * window;
    List<CapRequest> sends = new ArrayList<>();
    for (int i = 0; i < limit; i++) {
      sends.add(new CapRequest(1, "before-" + i, boundary - 1, policy));
    }
    for (int i = 0; i < limit; i++) {
      sends.add(new CapRequest(1, "at-" + i, boundary, policy));
    }
    long step = window / BURST_STEPS;
    for (int i = 1; i <= 2 * BURST_STEPS; i++) {
      sends.add(new CapRequest(1, "after-" + i, boundary + i * step, policy));
    }
    return sends;
  }

  private double burstOvershoot(
      Cap.Algorithm a, RedisCommands<String, String> redis, RedisConnector connector) {
    Cap cap = new Cap("1d", BURST_WINDOW, options.burstLimit(), a);
    List<CapRequest> sends =
        bursts(new Policy("burst", List.of(cap), Duration.ZERO), options.burstLimit());
    List<Decision> decisions = new ArrayList<>();
    redis.flushall();
    try (RedisSlidingLog log = connector.open()) {
      LimiterBench.decideAll(log, sends, options.batch(), decisions::addAll);
    }
    return overshoot(allowedTimes(sends, decisions), BURST_WINDOW.toMillis(), cap.limit());
  }

  /**
   * What was allowed of {@code work}, judged by true sliding windows of the policy's caps: every
   * allowed send from {@code judgedFrom} on is checked against the window of each cap that ends at
   * it. (Before then, counters start from nothing in the middle of a bucket, which a workload of
   * users with no history makes far worse than traffic that has been running.)
   */
  static Allowed allowed(
      List<CapRequest> work, List<Decision> decisions, Policy policy, long judgedFrom) {
    Map<Long, List<Long>> byUser = new HashMap<>();
    long allowed = 0;
    for (int i = 0; i < work.size(); i++) {
      if (decisions.get(i).outcome() == Decision.Outcome.ALLOWED) {
        byUser.computeIfAbsent(work.get(i).userId(), u -> new ArrayList<>()).add(work.get(i).now());
        allowed++;
      }
    }
    long judged = 0;
    long over = 0;
    double worst = 0;
    for (List<Long> user : byUser.values()) {
      long[] times = user.stream().mapToLong(Long::longValue).sorted().toArray();
      int[][] counts = new int[policy.caps().size()][];
      for (int c = 0; c < counts.length; c++) {
        counts[c] = inWindow(times, policy.caps().get(c).window().toMillis());
      }
      for (int i = 0; i < times.length; i++) {
        if (times[i] < judgedFrom) {
          continue;
        }
        judged++;
        boolean beyond = false;
        for (int c = 0; c < counts.length; c++) {
          int limit = policy.caps().get(c).limit();
          beyond |= counts[c][i] > limit;
          worst = Math.max(worst, (double) counts[c][i] / limit);
        }
        over += beyond ? 1 : 0;
      }
    }
    return new Allowed((double) allowed / work.size(), (double) over / Math.max(1, judged), worst);
  }

  /**
   * For each of {@code sorted}, how many of them lie in the window (t − window, t] ending there.
   */
  private static int[] inWindow(long[] sorted, long window) {
    int[] counts = new int[sorted.length];
    int first = 0;
    for (int last = 0; last < sorted.length; last++) {
      while (sorted[first] <= sorted[last] - window) {
        first++;
      }
      counts[last] = last - first + 1;
    }
    return counts;
  }

  private static long[] allowedTimes(List<CapRequest> sends, List<Decision> decisions) {
    List<Long> times = new ArrayList<>();
    for (int i = 0; i < sends.size(); i++) {
      if (decisions.get(i).outcome() == Decision.Outcome.ALLOWED) {
        times.add(sends.get(i).now());
      }
    }
    return times.stream().mapToLong(Long::longValue).toArray();
  }

  /**
   * The most of {@code times} inside any window (t − window, t], divided by {@code limit}: 1 or
   * less for an exact limiter.
   */
  static double overshoot(long[] times, long window, int limit) {
    long[] sorted = times.clone();
    Arrays.sort(sorted);
    return (double) Arrays.stream(inWindow(sorted, window)).max().orElse(0) / limit;
  }
}
