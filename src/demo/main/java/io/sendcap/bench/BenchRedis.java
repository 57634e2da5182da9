package io.sendcap.bench;

import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRedisCluster;
import java.util.function.DoubleSupplier;

/**
 * The Redis a benchmark caps against: one embedded standalone {@code redis-server}, or an embedded
 * Redis Cluster of several masters.
 */
final class BenchRedis implements AutoCloseable {
  /** The fewest masters a Redis Cluster needs. */
  static final int MIN_CLUSTER_NODES = 3;

  private final Runnable stop;
  private final DoubleSupplier cpuSeconds;
  private final String uri;
  private final int clusterNodes;

  private BenchRedis(Runnable stop, DoubleSupplier cpuSeconds, String uri, int clusterNodes) {
    this.stop = stop;
    this.cpuSeconds = cpuSeconds;
    this.uri = uri;
    this.clusterNodes = clusterNodes;
  }

  /**
   * Starts a standalone server if {@code clusterNodes} is 0, else a cluster of that many masters
   * with {@code replicas} replicas each (their CPU is counted with the masters').
   *
   * @throws IllegalArgumentException if {@code clusterNodes} is neither 0 nor at least {@value
   *     #MIN_CLUSTER_NODES}
   */
  static BenchRedis start(int clusterNodes, int replicas) {
    if (clusterNodes == 0) {
      EmbeddedRedis redis = EmbeddedRedis.start();
      return new BenchRedis(redis::close, redis::cpuSeconds, redis.uri(), 0);
    }
    if (clusterNodes < MIN_CLUSTER_NODES) {
      throw new IllegalArgumentException(
          "Redis Cluster nodes must be 0 (standalone) or at least "
              + MIN_CLUSTER_NODES
              + ", was "
              + clusterNodes);
    }
    EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start(clusterNodes, replicas);
    return new BenchRedis(
        cluster::close, cluster::cpuSeconds, String.join(",", cluster.uris()), clusterNodes);
  }

  /** The value of {@code cap.redis.uri}: one URI, or every master's, comma-separated. */
  String uri() {
    return uri;
  }

  /** The CPU time the server, or every node added up, has used so far. */
  double cpuSeconds() {
    return cpuSeconds.getAsDouble();
  }

  /** The value of {@code cap.redis.cluster}. */
  boolean cluster() {
    return clusterNodes > 0;
  }

  /** What runs, for the output: "standalone Redis" or "Redis Cluster of N masters". */
  String describe() {
    return cluster() ? "Redis Cluster of " + clusterNodes + " masters" : "standalone Redis";
  }

  /** Stops the server or every node of the cluster. */
  @Override
  public void close() {
    stop.run();
  }
}
