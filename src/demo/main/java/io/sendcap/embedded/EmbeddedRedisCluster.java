package io.sendcap.embedded;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Redis Cluster of masters, with or without replicas, each a {@code redis-server
 * --cluster-enabled yes} child process on free ports of 127.0.0.1 (client port p, cluster bus port
 * p + 10000).
 *
 * <p>Node {@code i} of {@code n} owns the contiguous slots {@code [i * 16384 / n, (i + 1) * 16384 /
 * n)}; without replicas, a stopped node's slots stay unserved until {@link #restart(int)}.
 *
 * <p>{@link #startTls} adds a TLS client port to every node and runs the cluster bus and
 * replication over TLS ({@code tls-cluster}, {@code tls-replication}): a TLS client is told the
 * nodes' TLS ports. The plain ports stay open on loopback for this class's own administration.
 */
public final class EmbeddedRedisCluster implements AutoCloseable {
  /** The number of masters that {@link #start()} starts. */
  public static final int DEFAULT_NODES = 3;

  /** The number of hash slots of a Redis Cluster. */
  public static final int SLOTS = 16_384;

  /**
   * How long the other nodes take to consider a stopped node failed ({@code cluster-node-timeout}).
   */
  public static final Duration NODE_TIMEOUT = Duration.ofSeconds(2);

  /** How long start and restart wait for every node to report {@code cluster_state:ok}. */
  public static final Duration CONVERGENCE_TIMEOUT = Duration.ofSeconds(30);

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRedisCluster.class);
  private static final Duration POLL_INTERVAL = Duration.ofMillis(50);

  /** Every node: the masters first (node {@code i < masters} owns the i-th share of the slots). */
  private final List<EmbeddedRedis> nodes = new ArrayList<>();

  /** The TLS client port of each node, in node order; empty without TLS. */
  private final List<Integer> tlsPorts = new ArrayList<>();

  /** What every node presents on its TLS ports and trusts of the others; null without TLS. */
  private final Certificates tls;

  private int masters;

  private EmbeddedRedisCluster(Certificates tls) {
    this.tls = tls;
  }

  /** Starts a cluster of {@link #DEFAULT_NODES} masters and returns once it serves every slot. */
  public static EmbeddedRedisCluster start() {
    return start(DEFAULT_NODES);
  }

  /**
   * Starts a cluster of {@code nodeCount} masters and returns once every node reports {@code
   * cluster_state:ok}.
   *
   * @throws IllegalArgumentException if {@code nodeCount} is not positive
   * @throws IllegalStateException if a node does not start or the cluster does not converge within
   *     {@link #CONVERGENCE_TIMEOUT}
   */
  public static EmbeddedRedisCluster start(int nodeCount) {
    return start(nodeCount, 0);
  }

  /**
   * Starts a cluster of {@code masterCount} masters with {@code replicasPerMaster} replicas each
   * (node {@code masterCount + m * replicasPerMaster + r} replicates master {@code m}), and returns
   * once every node reports {@code cluster_state:ok} and every replica's link to its master is up.
   *
   * @throws IllegalArgumentException if {@code masterCount} is not positive or {@code
   *     replicasPerMaster} negative
   * @throws IllegalStateException if a node does not start or the cluster does not converge within
   *     {@link #CONVERGENCE_TIMEOUT}
   */
  public static EmbeddedRedisCluster start(int masterCount, int replicasPerMaster) {
    return start(masterCount, replicasPerMaster, null);
  }

  /**
   * As {@link #start(int, int)}, every node also listening for TLS clients with {@code tls}'s
   * certificate, its cluster bus and replication over TLS.
   */
  public static EmbeddedRedisCluster startTls(
      int masterCount, int replicasPerMaster, Certificates tls) {
    return start(masterCount, replicasPerMaster, Objects.requireNonNull(tls));
  }

  private static EmbeddedRedisCluster start(
      int masterCount, int replicasPerMaster, Certificates tls) {
    if (masterCount < 1) {
      throw new IllegalArgumentException("node count must be at least 1, was " + masterCount);
    }
    if (replicasPerMaster < 0) {
      throw new IllegalArgumentException(
          "replicas per master must be at least 0, was " + replicasPerMaster);
    }
    EmbeddedRedisCluster cluster = new EmbeddedRedisCluster(tls);
    cluster.masters = masterCount;
    try {
      cluster.launchNodes(masterCount * (1 + replicasPerMaster));
      cluster.assignSlots();
      cluster.meet();
      cluster.awaitOk();
      cluster.replicate(replicasPerMaster);
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
    LOG.info("Redis Cluster accepts clients at {}", cluster.uris());
    return cluster;
  }

  /** The CPU time every node has used since it started, added up ({@code INFO cpu}). */
  public double cpuSeconds() {
    return nodes.stream().mapToDouble(EmbeddedRedis::cpuSeconds).sum();
  }

  /**
   * Returns the {@code host:port} of every node's TLS port, in node order, e.g. {@code
   * 127.0.0.1:40123}: started with {@link #startTls}, else none.
   */
  public List<String> tlsAddresses() {
    return tlsPorts.stream().map(p -> "127.0.0.1:" + p).toList();
  }

  /**
   * Runs {@code command} on every node over its plain port, e.g. {@code ACL SETUSER ...}: ACL users
   * are each node's own, not the cluster's.
   */
  public void onEveryNode(String... command) {
    nodes.forEach(n -> call(n, command));
  }

  /** Returns the URI of every node, in node order, e.g. {@code redis://127.0.0.1:40123}. */
  public List<String> uris() {
    return nodes.stream().map(EmbeddedRedis::uri).toList();
  }

  /** Returns the index of the master that owned {@code slot} at start. */
  public int nodeForSlot(int slot) {
    if (slot < 0 || slot >= SLOTS) {
      throw new IllegalArgumentException("slot must be in [0, " + SLOTS + "), was " + slot);
    }
    int node = masters - 1;
    while (firstSlot(node) > slot) {
      node--;
    }
    return node;
  }

  /**
   * Kills node {@code node} with SIGKILL, as a crashed machine stops: no shutdown, nothing saved.
   * With replicas, one of the master's is promoted by the cluster once {@link #NODE_TIMEOUT} has
   * passed and the others agree.
   */
  public synchronized void kill(int node) {
    nodes.get(node).killNow();
  }

  /**
   * Returns once node {@code replica} is a master (promoted after its master failed) and every
   * running node reports {@code cluster_state:ok}: every slot served again.
   *
   * @throws IllegalStateException if that takes longer than {@link #CONVERGENCE_TIMEOUT}
   */
  public void awaitPromoted(int replica) {
    Instant deadline = Instant.now().plus(CONVERGENCE_TIMEOUT);
    while (!role(replica).equals("master")
        || !nodes.stream()
            .filter(EmbeddedRedis::isRunning)
            .allMatch(n -> info(n, "CLUSTER", "INFO").contains("cluster_state:ok"))) {
      if (Instant.now().isAfter(deadline)) {
        throw new IllegalStateException(
            "node "
                + nodes.get(replica).uri()
                + " of Redis Cluster was not promoted within "
                + CONVERGENCE_TIMEOUT
                + "; its CLUSTER NODES:\n"
                + info(nodes.get(replica), "CLUSTER", "NODES"));
      }
      pause();
    }
  }

  /** The role of node {@code node}: {@code master} or {@code slave} ({@code INFO replication}). */
  public String role(int node) {
    return info(nodes.get(node), "INFO", "replication").contains("role:master")
        ? "master"
        : "slave";
  }

  /**
   * Stops node {@code node}, keeping its port and cluster identity; its slots are unserved, and the
   * other nodes report {@code cluster_state:fail} once {@link #NODE_TIMEOUT} has passed.
   */
  public synchronized void stop(int node) {
    nodes.get(node).stop();
  }

  /**
   * Starts node {@code node} again on the same port and returns once every node reports {@code
   * cluster_state:ok}; a running node is restarted.
   */
  public synchronized void restart(int node) {
    nodes.get(node).restart();
    awaitOk();
  }

  /** Stops every node and deletes their directories. */
  @Override
  public synchronized void close() {
    EmbeddedRedis.closeAll(nodes);
  }

  private void launchNodes(int nodeCount) {
    Set<Integer> taken = new HashSet<>();
    for (int i = 0; i < nodeCount; i++) {
      int port = FreePorts.pickWithClusterBus(taken);
      taken.add(port);
      taken.add(port + FreePorts.CLUSTER_BUS_OFFSET);
      List<String> options = new ArrayList<>(clusterOptions(port));
      if (tls != null) {
        int tlsPort = FreePorts.pick();
        while (taken.contains(tlsPort)) {
          tlsPort = FreePorts.pick();
        }
        taken.add(tlsPort);
        tlsPorts.add(tlsPort);
        options.addAll(tls.redisTlsOptions(tlsPort));
        options.addAll(
            List.of(
                "--tls-cluster", "yes",
                "--tls-replication", "yes",
                // the bus port follows the TLS port unless set: keep it beside the plain one
                "--cluster-port", String.valueOf(port + FreePorts.CLUSTER_BUS_OFFSET)));
      }
      nodes.add(EmbeddedRedis.launched(new EmbeddedRedis(port, options)));
    }
  }

  private static List<String> clusterOptions(int port) {
    return List.of(
        "--cluster-enabled", "yes",
        "--cluster-config-file", "nodes-" + port + ".conf",
        "--cluster-node-timeout", "" + NODE_TIMEOUT.toMillis());
  }

  private void assignSlots() {
    for (int i = 0; i < masters; i++) {
      List<String> command = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
      for (int slot = firstSlot(i); slot < firstSlot(i + 1); slot++) {
        command.add(Integer.toString(slot));
      }
      call(nodes.get(i), command.toArray(String[]::new));
    }
  }

  private int firstSlot(int node) {
    return node * SLOTS / masters;
  }

  /** Makes the nodes after the masters replicas, {@code perMaster} of each, and waits for sync. */
  private void replicate(int perMaster) {
    if (perMaster == 0) {
      return;
    }
    for (int m = 0; m < masters; m++) {
      String masterId = call(nodes.get(m), "CLUSTER", "MYID");
      for (int r = 0; r < perMaster; r++) {
        call(nodes.get(masters + m * perMaster + r), "CLUSTER", "REPLICATE", masterId);
      }
    }
    Instant deadline = Instant.now().plus(CONVERGENCE_TIMEOUT);
    while (!nodes.subList(masters, nodes.size()).stream()
        .allMatch(n -> info(n, "INFO", "replication").contains("master_link_status:up"))) {
      if (Instant.now().isAfter(deadline)) {
        throw new IllegalStateException(
            "the replicas of Redis Cluster "
                + uris()
                + " did not sync with their masters within "
                + CONVERGENCE_TIMEOUT);
      }
      pause();
    }
    awaitOk();
  }

  private static String info(EmbeddedRedis node, String... command) {
    try {
      return node.call(command);
    } catch (IOException e) {
      return "";
    }
  }

  private void meet() {
    EmbeddedRedis first = nodes.get(0);
    for (EmbeddedRedis other : nodes.subList(1, nodes.size())) {
      call(
          first,
          "CLUSTER",
          "MEET",
          "127.0.0.1",
          Integer.toString(other.port()),
          Integer.toString(other.port() + FreePorts.CLUSTER_BUS_OFFSET));
    }
  }

  private void awaitOk() {
    Instant deadline = Instant.now().plus(CONVERGENCE_TIMEOUT);
    while (!nodes.stream().allMatch(this::isOk)) {
      if (Instant.now().isAfter(deadline)) {
        throw new IllegalStateException(
            "Redis Cluster "
                + uris()
                + " did not reach cluster_state:ok on every node within "
                + CONVERGENCE_TIMEOUT);
      }
      pause();
    }
  }

  private boolean isOk(EmbeddedRedis node) {
    try {
      String info = node.call("CLUSTER", "INFO");
      return info.contains("cluster_state:ok")
          && info.contains("cluster_known_nodes:" + nodes.size() + "\r\n");
    } catch (IOException e) {
      LOG.debug("Redis Cluster node {} not ready: {}", node.uri(), e.getMessage());
      return false;
    }
  }

  private static String call(EmbeddedRedis node, String... command) {
    try {
      return node.call(command);
    } catch (IOException e) {
      throw new IllegalStateException(
          "Redis Cluster node " + node.uri() + " failed " + command[0] + " " + command[1], e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(POLL_INTERVAL.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while waiting for Redis Cluster", e);
    }
  }
}
