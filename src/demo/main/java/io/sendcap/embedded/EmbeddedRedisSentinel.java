package io.sendcap.embedded;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Sentinel-managed standalone Redis: a master, one replica of it ({@code --replicaof}) and
 * Sentinels ({@code redis-server CONF --sentinel}) monitoring the master under {@link
 * #MASTER_NAME}, each a child process on a free port of 127.0.0.1.
 *
 * <p>Data node 0 is the master at start and node 1 its replica. The Sentinels consider a master
 * that does not answer for {@link #DOWN_AFTER} down and, a majority of them agreeing, promote the
 * replica; clients given {@link #uri()} ask them where the master is.
 */
public final class EmbeddedRedisSentinel implements AutoCloseable {
  /** The name under which the Sentinels monitor the master: the fragment of {@link #uri()}. */
  public static final String MASTER_NAME = "sendcap";

  /** How long a master may not answer before a Sentinel considers it down. */
  public static final Duration DOWN_AFTER = Duration.ofSeconds(1);

  /** How long start and {@link #awaitPromoted(int)} wait for the servers to agree. */
  public static final Duration CONVERGENCE_TIMEOUT = Duration.ofSeconds(30);

  private static final Duration FAILOVER_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration POLL_INTERVAL = Duration.ofMillis(50);
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRedisSentinel.class);

  /** The master (0) and its replica (1). */
  private final List<EmbeddedRedis> nodes = new ArrayList<>();

  private final List<EmbeddedRedis> sentinels = new ArrayList<>();

  private EmbeddedRedisSentinel() {}

  /**
   * Starts a master, its replica and {@code sentinelCount} Sentinels whose quorum is a majority of
   * them, and returns once the replica is in sync and every Sentinel knows the replica and the
   * other Sentinels.
   *
   * @throws IllegalArgumentException if {@code sentinelCount} is not positive
   * @throws IllegalStateException if a server does not start or they do not converge within {@link
   *     #CONVERGENCE_TIMEOUT}
   */
  public static EmbeddedRedisSentinel start(int sentinelCount) {
    return start(sentinelCount, List.of());
  }

  /**
   * Starts the servers of {@link #start(int)}, the master and the replica with more {@code
   * redis-server} options, such as an ACL user ({@code --user NAME on >PASSWORD ...}); the
   * Sentinels, the replica and the harness connect as the default user.
   */
  public static EmbeddedRedisSentinel start(int sentinelCount, List<String> nodeOptions) {
    if (sentinelCount < 1) {
      throw new IllegalArgumentException("sentinel count must be at least 1, was " + sentinelCount);
    }
    EmbeddedRedisSentinel setup = new EmbeddedRedisSentinel();
    try {
      setup.launchNodes(nodeOptions);
      setup.launchSentinels(sentinelCount);
    } catch (RuntimeException e) {
      setup.close();
      throw e;
    }
    LOG.info("Redis master and replica monitored by Sentinel at {}", setup.uri());
    return setup;
  }

  /**
   * The URI that clients connect with, naming every Sentinel and the master's name, e.g. {@code
   * redis-sentinel://127.0.0.1:40123,127.0.0.1:40124#sendcap}.
   */
  public String uri() {
    return sentinels.stream()
        .map(s -> "127.0.0.1:" + s.port())
        .collect(Collectors.joining(",", "redis-sentinel://", "#" + MASTER_NAME));
  }

  /**
   * Kills data node {@code node} with SIGKILL, as a crashed machine stops: no shutdown, nothing
   * saved. Killing the master, the Sentinels promote the replica after {@link #DOWN_AFTER}.
   */
  public synchronized void kill(int node) {
    nodes.get(node).killNow();
  }

  /**
   * Returns once data node {@code node} is a master and every Sentinel names it as the master.
   *
   * @throws IllegalStateException if that takes longer than {@link #CONVERGENCE_TIMEOUT}
   */
  public void awaitPromoted(int node) {
    String port = Integer.toString(nodes.get(node).port());
    await(
        () ->
            role(node).equals("master")
                && sentinels.stream().allMatch(s -> masterAddress(s).endsWith("\n" + port)),
        () ->
            "data node "
                + nodes.get(node).uri()
                + " was not promoted by Sentinel; the Sentinels name "
                + sentinels.stream().map(this::masterAddress).toList());
  }

  /**
   * Sends one command to data node {@code node} (0: the master at start, 1: its replica) and
   * returns its reply as text.
   */
  public String call(int node, String... command) throws IOException {
    return nodes.get(node).call(command);
  }

  /** The role of data node {@code node}: {@code master} or {@code slave} ({@code INFO}). */
  public String role(int node) {
    return info(nodes.get(node), "INFO", "replication").contains("role:master")
        ? "master"
        : "slave";
  }

  /** Stops every Sentinel, then the data nodes, and deletes their directories. */
  @Override
  public synchronized void close() {
    List<EmbeddedRedis> all = new ArrayList<>(sentinels);
    all.addAll(nodes);
    EmbeddedRedis.closeAll(all);
  }

  private void launchNodes(List<String> options) {
    EmbeddedRedis master = EmbeddedRedis.launched(new EmbeddedRedis(FreePorts.pick(), options));
    nodes.add(master);
    List<String> replicaOptions = new ArrayList<>(options);
    replicaOptions.addAll(List.of("--replicaof", "127.0.0.1", Integer.toString(master.port())));
    nodes.add(EmbeddedRedis.launched(new EmbeddedRedis(FreePorts.pick(), replicaOptions)));
    await(
        () -> info(nodes.get(1), "INFO", "replication").contains("master_link_status:up"),
        () -> "replica " + nodes.get(1).uri() + " did not sync with master " + master.uri());
  }

  private void launchSentinels(int count) {
    int quorum = count / 2 + 1;
    List<String> conf =
        List.of(
            "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + nodes.get(0).port() + " " + quorum,
            "sentinel down-after-milliseconds " + MASTER_NAME + " " + DOWN_AFTER.toMillis(),
            "sentinel failover-timeout " + MASTER_NAME + " " + FAILOVER_TIMEOUT.toMillis());
    for (int i = 0; i < count; i++) {
      sentinels.add(
          EmbeddedRedis.launched(new EmbeddedRedis(FreePorts.pick(), conf, List.of("--sentinel"))));
    }
    await(
        () -> sentinels.stream().allMatch(s -> knowsTheReplicaAndTheOthers(s, count - 1)),
        () ->
            "the Sentinels did not discover the replica and each other: "
                + sentinels.stream().map(EmbeddedRedisSentinel::masterState).toList());
  }

  /** Whether a Sentinel knows the replica and {@code others} other Sentinels. */
  private static boolean knowsTheReplicaAndTheOthers(EmbeddedRedis sentinel, int others) {
    Map<String, String> state = masterState(sentinel);
    return "1".equals(state.get("num-slaves"))
        && Integer.toString(others).equals(state.get("num-other-sentinels"));
  }

  /** What a Sentinel knows of the master ({@code SENTINEL MASTER}), field by field. */
  private static Map<String, String> masterState(EmbeddedRedis sentinel) {
    String[] fields = info(sentinel, "SENTINEL", "MASTER", MASTER_NAME).split("\n");
    Map<String, String> state = new HashMap<>();
    for (int i = 0; i + 1 < fields.length; i += 2) {
      state.put(fields[i], fields[i + 1]);
    }
    return state;
  }

  /** The master's address as a Sentinel reports it: host and port, one per line. */
  private String masterAddress(EmbeddedRedis sentinel) {
    return info(sentinel, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME);
  }

  private static String info(EmbeddedRedis server, String... command) {
    try {
      String reply = server.call(command);
      return reply == null ? "" : reply;
    } catch (IOException e) {
      return "";
    }
  }

  private static void await(BooleanSupplier condition, Supplier<String> failure) {
    Instant deadline = Instant.now().plus(CONVERGENCE_TIMEOUT);
    while (!condition.getAsBoolean()) {
      if (Instant.now().isAfter(deadline)) {
        throw new IllegalStateException(failure.get() + " within " + CONVERGENCE_TIMEOUT);
      }
      try {
        Thread.sleep(POLL_INTERVAL.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("Interrupted while waiting for Redis Sentinel", e);
      }
    }
  }
}
