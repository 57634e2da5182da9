package io.sendcap.bench;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Decision;
import io.sendcap.limit.RedisConnector;
import io.sendcap.limit.RedisSlidingLog;
import io.sendcap.limit.Resp;
import io.sendcap.limit.ScriptCall;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.function.BiFunction;
import java.util.function.Consumer;

/**
 * The limiter benchmark: sendcap's script against the same workload driven in several ways, and the
 * seed script it replaces, all on one Redis in one run.
 */
final class LimiterBench {
  /** What to run. */
  record Options(
      int sends,
      int users,
      int oneAtATimeSends,
      int peerSends,
      int memoryUsers,
      int batch,
      int sendsPerCall,
      int depth,
      int connections) {}

  /**
   * What was measured; a null rate was not measured. Redis CPU figures are microseconds of the
   * server's CPU time (INFO cpu, user and system) per decision.
   */
  record Result(
      Run pipelined,
      double decisionsPerRoundTrip,
      Run saturating,
      double oneAtATimePerS,
      Run onePerCall,
      Run seed,
      Double bucket4jPerS,
      Double redissonPerS,
      double bytesPerUser,
      long sampleKeyBytes) {
    /**
     * The ceiling of sendcap's script: the decisions one second of Redis CPU pays for, at the lower
     * of the two costs per decision this run measured for it (saturating and pipelined). Redis
     * decides on one thread, so no client can do more; and a cost measured on either run is one the
     * server has shown it can work at.
     *
     * <p>Measured throughput alone is no bound: the pipelined client keeps Redis busy nearly every
     * moment too, so a saturating run reaches the same figure give or take the machine's noise, and
     * the lower of two equal figures is a coin toss. Nor is the saturating run's cost alone: the
     * two runs' costs per decision differ by a fraction of a per cent either way.
     */
    double ceilingPerS() {
      return Math.max(saturating.capacity(), pipelined.capacity());
    }

    /**
     * Whether the pipelined client beat the ceiling, which means Redis was on the CPU for longer
     * than the run lasted: the CPU or the clock was misread, and the ceiling bounds nothing.
     */
    boolean ceilingBelowPipelined() {
      return ceilingPerS() < pipelined.perS();
    }
  }

  /**
   * One timed run of a script: the decisions per second it made and the Redis CPU per decision it
   * cost.
   */
  record Run(double perS, double redisCpuMicros) {
    /** Decisions per second of Redis CPU: what the server can do at most at this cost. */
    double capacity() {
      return 1e6 / redisCpuMicros;
    }

    /** The share of the run's time that Redis was on the CPU, 1.0 when saturated. */
    double redisBusy() {
      return perS / capacity();
    }
  }

  static final Policy POLICY =
      new Policy(
          "bench",
          List.of(new Cap("1d", Duration.ofDays(1), 2), new Cap("7d", Duration.ofDays(7), 5)),
          Duration.ZERO);

  /** The start of every workload, in epoch ms. */
  static final long T0 = 1_790_000_000_000L;

  private static final long HOUR = 3_600_000L;

  private final Options options;
  private final String uri;
  private final PrintStream progress;

  LimiterBench(Options options, String uri, PrintStream progress) {
    this.options = options;
    this.uri = uri;
    this.progress = progress;
  }

  /** The workload: sends to users drawn uniformly, spread evenly over a week, unique ids. */
  static List<CapRequest> workload(int sends, int users) {
    return workload(sends, users, Duration.ofDays(7), POLICY);
  }

  /** The same workload spread over {@code span} under another policy. */
  static List<CapRequest> workload(int sends, int users, Duration span, Policy policy) {
    SplittableRandom random = new SplittableRandom(7);
    long ms = span.toMillis();
    List<CapRequest> requests = new ArrayList<>(sends);
    for (int i = 0; i < sends; i++) {
      requests.add(new CapRequest(random.nextInt(users), "m" + i, T0 + ms * i / sends, policy));
    }
    return requests;
  }

  Result run() throws IOException {
    List<CapRequest> work = workload(options.sends(), options.users());
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> admin = client.connect();
        RedisConnector connector = RedisConnector.connect(settings())) {
      RedisCommands<String, String> redis = admin.sync();
      Run pipelined = pipelined(redis, connector, work);
      double perRoundTrip = (double) connector.decisions() / connector.flushes();
      Run saturating = ceiling(redis, connector, work, "sendcap's script");
      double oneAtATime = oneAtATime(redis, connector, work);
      Run onePerCall;
      try (RedisConnector single = RedisConnector.connect(settings(1))) {
        onePerCall = ceiling(redis, single, work, "sendcap's script, one send per call");
      }
      Run seed = seedCeiling(redis, work);
      Double bucket4j = peer(redis, work, "Bucket4j (Lettuce)", Bucket4jPeer::run);
      Double redisson = peer(redis, work, "Redisson RRateLimiter", RedissonPeer::run);
      long[] memory = memory(redis, connector);
      return new Result(
          pipelined,
          perRoundTrip,
          saturating,
          oneAtATime,
          onePerCall,
          seed,
          bucket4j,
          redisson,
          memory[0],
          memory[1]);
    } finally {
      client.shutdown();
    }
  }

  private SendcapConfig.Limiter settings() {
    return settings(options.sendsPerCall());
  }

  private SendcapConfig.Limiter settings(int sendsPerCall) {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", uri);
    p.setProperty("cap.redis.timeout.ms", "60000");
    // no Kafka transaction here for a batch's time to stay inside
    p.setProperty("processing.guarantee", "at_least_once");
    p.setProperty("cap.redis.sends-per-call", String.valueOf(sendsPerCall));
    return SendcapConfig.from(p, "bench").limiter();
  }

  private Run pipelined(
      RedisCommands<String, String> redis, RedisConnector connector, List<CapRequest> work) {
    progress.println(
        "sendcap pipelined: " + work.size() + " sends in batches of " + options.batch());
    try (RedisSlidingLog log = connector.open()) {
      // Warm-up, as JMH would do: the same code on a tenth of the workload, then forgotten, so that
      // the timed run measures compiled code rather than the JIT compiler.
      redis.flushall();
      decideAll(log, work.subList(0, work.size() / 10));
      redis.flushall();
      double cpuBefore = AlgorithmsBench.cpuSeconds(redis);
      long start = System.nanoTime();
      decideAll(log, work);
      double rate = rate(work.size(), start);
      double cpu = AlgorithmsBench.cpuSeconds(redis) - cpuBefore;
      return new Run(rate, cpu * 1e6 / work.size());
    }
  }

  private void decideAll(RedisSlidingLog log, List<CapRequest> work) {
    decideAll(log, work, options.batch(), decisions -> {});
  }

  /**
   * Decides {@code work} in batches of {@code batch}, one batch in flight while the next one is
   * prepared, handing each batch's decisions to {@code sink} in order.
   */
  static void decideAll(
      CapStore log, List<CapRequest> work, int batch, Consumer<List<Decision>> sink) {
    CapStore.Pending inFlight = null;
    for (int i = 0; i < work.size(); i += batch) {
      CapStore.Pending next = log.submit(work.subList(i, Math.min(work.size(), i + batch)));
      if (inFlight != null) {
        sink.accept(inFlight.await());
      }
      inFlight = next;
    }
    if (inFlight != null) {
      sink.accept(inFlight.await());
    }
  }

  /**
   * The script's ceiling: each connection decides the sends of its own users (so every user's sends
   * stay in order), in the calls the limiter would make, encoded before the clock starts.
   */
  private Run ceiling(
      RedisCommands<String, String> redis,
      RedisConnector connector,
      List<CapRequest> work,
      String what)
      throws IOException {
    progress.println("ceiling of " + what + ": " + saturation());
    List<List<byte[]>> requests = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (List<CapRequest> sends : byUser(work)) {
        List<byte[]> encoded = new ArrayList<>();
        for (int i = 0; i < sends.size(); i += options.batch()) {
          for (ScriptCall call :
              log.encode(sends.subList(i, Math.min(sends.size(), i + options.batch())))) {
            encoded.add(evalsha(connector.sha(), call.keys(), call.args()));
          }
        }
        requests.add(encoded);
      }
    }
    return drive(redis, requests, work.size());
  }

  private String saturation() {
    return options.connections() + " connections, " + options.depth() + " calls in flight on each";
  }

  /** The sends of {@code work} split by user over the connections, in order. */
  private List<List<CapRequest>> byUser(List<CapRequest> work) {
    List<List<CapRequest>> split = new ArrayList<>();
    for (int c = 0; c < options.connections(); c++) {
      split.add(new ArrayList<>());
    }
    for (CapRequest r : work) {
      split.get((int) Math.floorMod(r.userId(), (long) options.connections())).add(r);
    }
    return split;
  }

  private double oneAtATime(
      RedisCommands<String, String> redis, RedisConnector connector, List<CapRequest> work) {
    List<CapRequest> some = work.subList(0, Math.min(work.size(), options.oneAtATimeSends()));
    progress.println("one at a time: " + some.size() + " sends, one round trip each");
    redis.flushall();
    try (RedisSlidingLog log = connector.open()) {
      long start = System.nanoTime();
      for (CapRequest r : some) {
        log.decide(List.of(r));
      }
      return rate(some.size(), start);
    }
  }

  /** The seed script's ceiling, one send per EVALSHA as Grab calls it. */
  private Run seedCeiling(RedisCommands<String, String> redis, List<CapRequest> work)
      throws IOException {
    progress.println("ceiling of the seed script, one send per call: " + saturation());
    String sha = redis.scriptLoad(resource("/bench/seed.lua"));
    List<List<byte[]>> requests = new ArrayList<>();
    for (List<CapRequest> sends : byUser(work)) {
      List<byte[]> encoded = new ArrayList<>(sends.size());
      for (CapRequest r : sends) {
        byte[][] keys = {ascii("g{" + r.userId() + "}")};
        encoded.add(evalsha(sha, keys, new byte[][] {ascii(Long.toString(r.now()))}));
      }
      requests.add(encoded);
    }
    return drive(redis, requests, work.size());
  }

  /** A peer library's rate, or null when its jars are missing or clash (bench-lib). */
  private Double peer(
      RedisCommands<String, String> redis,
      List<CapRequest> work,
      String name,
      BiFunction<String, List<CapRequest>, Double> run) {
    List<CapRequest> some = work.subList(0, Math.min(work.size(), options.peerSends()));
    progress.println(name + ": " + some.size() + " sends, one decision each");
    redis.flushall();
    try {
      return run.apply(uri, some);
    } catch (LinkageError e) {
      progress.println(name + " could not run (is target/demo/bench-lib on the classpath?): " + e);
      return null;
    }
  }

  /** Bytes of Redis memory per user holding 5 logged sends, and MEMORY USAGE of one such key. */
  private long[] memory(RedisCommands<String, String> redis, RedisConnector connector) {
    int users = options.memoryUsers();
    progress.println("memory: " + users + " users holding 5 logged sends each");
    redis.flushall();
    Policy roomy =
        new Policy("memory", List.of(new Cap("7d", Duration.ofDays(7), 10)), Duration.ZERO);
    long before = usedMemory(redis);
    try (RedisSlidingLog log = connector.open()) {
      List<CapRequest> batch = new ArrayList<>();
      for (int k = 0; k < 5; k++) {
        for (int u = 0; u < users; u++) {
          batch.add(new CapRequest(u, "u" + u + "-" + k, T0 + k * HOUR, roomy));
          if (batch.size() == options.batch()) {
            log.decide(batch);
            batch.clear();
          }
        }
      }
      log.decide(batch);
    }
    long after = usedMemory(redis);
    Long sample = redis.memoryUsage("s{0}");
    return new long[] {(after - before) / users, sample == null ? 0 : sample};
  }

  /** The server's {@code used_memory} from INFO memory, in bytes. */
  static long usedMemory(RedisCommands<String, String> redis) {
    return redis
        .info("memory")
        .lines()
        .filter(l -> l.startsWith("used_memory:"))
        .mapToLong(l -> Long.parseLong(l.substring("used_memory:".length()).trim()))
        .findFirst()
        .orElseThrow();
  }

  /**
   * Runs the first tenth of each connection's requests as a warm-up, flushes the data, then times
   * them all, reading the server's CPU time before and after.
   */
  private Run drive(RedisCommands<String, String> redis, List<List<byte[]>> requests, int decisions)
      throws IOException {
    RedisURI parsed = RedisURI.create(uri);
    redis.flushall();
    List<List<byte[]>> warmUp = requests.stream().map(r -> r.subList(0, r.size() / 10)).toList();
    check(RawPipeline.saturate(parsed.getHost(), parsed.getPort(), warmUp, options.depth()));
    redis.flushall();
    double cpuBefore = AlgorithmsBench.cpuSeconds(redis);
    long start = System.nanoTime();
    int errors =
        RawPipeline.saturate(parsed.getHost(), parsed.getPort(), requests, options.depth());
    double rate = rate(decisions, start);
    double cpu = AlgorithmsBench.cpuSeconds(redis) - cpuBefore;
    check(errors);
    return new Run(rate, cpu * 1e6 / decisions);
  }

  private static void check(int errors) {
    if (errors > 0) {
      throw new IllegalStateException(errors + " calls failed; the figure would be wrong");
    }
  }

  private static byte[] evalsha(String sha, byte[][] keys, byte[][] args) {
    return Resp.command(
        new byte[][] {ascii("EVALSHA"), ascii(sha), ascii(Integer.toString(keys.length))},
        keys,
        args);
  }

  private static double rate(int count, long startNanos) {
    return count * 1e9 / (System.nanoTime() - startNanos);
  }

  private static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  private static String resource(String name) {
    try (InputStream in = LimiterBench.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
