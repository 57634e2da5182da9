package io.sendcap.limit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.metrics.CommandLatencyRecorder;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sendcap.config.SendcapConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The Redis client of the limiter: one per application, handing out one {@link RedisSlidingLog}
 * (one connection) per stream task.
 *
 * <p>Standalone Redis and Redis Cluster are both supported; with a cluster, each call is routed to
 * the node that owns its key's slot. A standalone master may be given as a {@code
 * redis-sentinel://} URI: the client asks the Sentinels where the master is at every
 * (re)connection, so that after a failover a lost connection reconnects to the replica they
 * promoted.
 */
public final class RedisConnector implements AutoCloseable {
  /** The classpath resource of the caps script (the sliding log and the other algorithms). */
  static final String SCRIPT = "/lua/sliding_log.lua";

  /**
   * Reconnect attempts after a lost connection: exponential from 10 ms up to 1 s (Lettuce's default
   * goes up to 30 s), so that sends are decided by the limiter again soon after Redis is back.
   */
  private static final Delay RECONNECT_DELAY =
      Delay.exponential(Duration.ofMillis(10), Duration.ofSeconds(1), 2, TimeUnit.MILLISECONDS);

  /**
   * How a cluster client follows a failover: at once when a node answers MOVED or ASK, a connection
   * keeps failing to reconnect, or a command finds its slot or node unknown (Lettuce 7's adaptive
   * triggers, all on by default; at most every 2 s here), and every 30 s in any case. Without it,
   * Lettuce keeps the topology it read at start, and the slots of a failed master stay routed to it
   * after its replica was promoted.
   */
  static final ClusterTopologyRefreshOptions TOPOLOGY_REFRESH =
      ClusterTopologyRefreshOptions.builder()
          .adaptiveRefreshTriggersTimeout(Duration.ofSeconds(2))
          .enablePeriodicRefresh(Duration.ofSeconds(30))
          .build();

  private final SendcapConfig.Limiter settings;
  private final ClientResources resources;
  private final RedisClient standalone;
  private final RedisClusterClient cluster;
  private final byte[] script;
  private final String sha;
  private final LongAdder calls = new LongAdder();
  private final LongAdder decisions = new LongAdder();
  private final LongAdder flushes = new LongAdder();
  private final LongAdder reloads = new LongAdder();
  private final LongAdder waitShortfalls = new LongAdder();
  private final LongAdder slotRetries = new LongAdder();
  private final Set<RedisSlidingLog> open = ConcurrentHashMap.newKeySet();
  private final Object probeLock = new Object();

  /** The connection {@link #ping()} probes over, once opened; guarded by {@link #probeLock}. */
  private RedisSlidingLog probe;

  /**
   * Connections of this client lost other than by closing them: a lost connection may come back to
   * a server that no longer has the script (a restart, a failover). Counted when Lettuce sees the
   * connection go, before it schedules the reconnect, so a log that reads this count before a batch
   * sees every loss that happened before the batch's calls could go out on a new connection.
   */
  private final AtomicLong connectionsLost = new AtomicLong();

  private final Timer roundTrips;

  private RedisConnector(SendcapConfig.Limiter settings, MeterRegistry metrics) {
    this.settings = settings;
    this.roundTrips =
        Timer.builder("sendcap.redis.round.trip")
            .description("From a batch's flush to Redis's last reply to it")
            .publishPercentileHistogram()
            .register(metrics);
    FunctionCounter.builder("sendcap.redis.calls", calls, LongAdder::sum)
        .description("Script calls (EVALSHA) sent")
        .register(metrics);
    FunctionCounter.builder("sendcap.redis.round.trips", flushes, LongAdder::sum)
        .description("Pipelined flushes, each one network round trip per node")
        .register(metrics);
    FunctionCounter.builder("sendcap.redis.wait.shortfalls", waitShortfalls, LongAdder::sum)
        .description(
            "Batches' writes on a master that fewer replicas than cap.redis.wait-replicas"
                + " acknowledged (WAIT ended first, or the master had too few replicas to ask)")
        .register(metrics);
    FunctionCounter.builder("sendcap.redis.slot.retries", slotRetries, LongAdder::sum)
        .description(
            "Script calls sent again because Redis refused them while their cluster slot moved"
                + " (TRYAGAIN)")
        .register(metrics);
    FunctionCounter.builder("sendcap.redis.script.reloads", reloads, LongAdder::sum)
        .description(
            "Times a task loaded the script again: ahead of its next batch after a connection was"
                + " lost, or after a node answered NOSCRIPT")
        .register(metrics);
    // Lettuce records every command's latency when LatencyUtils is on the class path (Micrometer
    // brings it), on the I/O thread, for events nobody here reads: sendcap.redis.round.trip and
    // sendcap.batch.wait time what matters, once per flush and per batch (BENCHMARKS.md).
    this.resources =
        ClientResources.builder()
            .reconnectDelay(RECONNECT_DELAY)
            .commandLatencyRecorder(CommandLatencyRecorder.disabled())
            .build();
    this.script = readScript(SCRIPT);
    this.sha = Scripts.sha1(script);
    TimeoutOptions timeouts = TimeoutOptions.enabled(settings.timeout());
    if (settings.cluster()) {
      this.standalone = null;
      this.cluster =
          RedisClusterClient.create(
              resources, settings.uris().stream().map(RedisURI::create).toList());
      // Node connections open lazily, when the first command for a node's slots is written; a
      // client that rejected commands while disconnected would reject that first batch. Commands
      // wait for the node instead, up to the command timeout.
      cluster.setOptions(
          ClusterClientOptions.builder()
              .timeoutOptions(timeouts)
              .topologyRefreshOptions(TOPOLOGY_REFRESH)
              .sslOptions(sslOptions(settings))
              .build());
    } else {
      this.cluster = null;
      this.standalone = RedisClient.create(resources, RedisURI.create(settings.uris().get(0)));
      standalone.setOptions(
          ClientOptions.builder()
              .timeoutOptions(timeouts)
              .disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
              .sslOptions(sslOptions(settings))
              .build());
    }
    RedisConnectionStateListener losses =
        new RedisConnectionStateListener() {
          @Override
          public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
            if (!connection.isClosed()) {
              connectionsLost.incrementAndGet();
            }
          }
        };
    if (cluster != null) {
      cluster.addListener(losses);
    } else {
      standalone.addListener(losses);
    }
  }

  /**
   * TLS for {@code rediss://} URIs: the JDK's TLS with the JDK's trusted certificates, or those of
   * {@code cap.redis.ssl.truststore.location}. Host names are verified ({@code rediss://} does so
   * unless the URI says {@code verifyPeer=...} otherwise).
   */
  private static SslOptions sslOptions(SendcapConfig.Limiter settings) {
    SslOptions.Builder ssl = SslOptions.builder().jdkSslProvider();
    settings
        .truststore()
        .ifPresent(
            store -> ssl.truststore(store.toFile(), settings.truststorePassword().orElse(null)));
    return ssl.build();
  }

  /**
   * Connects to Redis and loads the script, failing fast if Redis cannot be reached.
   *
   * @throws LimiterUnavailableException if Redis does not answer
   */
  public static RedisConnector connect(SendcapConfig.Limiter settings) {
    return connect(settings, new CompositeMeterRegistry());
  }

  /**
   * Connects to Redis and loads the script, failing fast if Redis cannot be reached; the limiter's
   * meters are registered in {@code metrics}.
   *
   * @throws LimiterUnavailableException if Redis does not answer
   */
  public static RedisConnector connect(SendcapConfig.Limiter settings, MeterRegistry metrics) {
    RedisConnector connector = new RedisConnector(settings, metrics);
    try (RedisSlidingLog log = connector.open()) {
      log.loadScript();
      log.callScriptWithNoSends();
      log.checkWaitCommands();
    } catch (RuntimeException e) {
      connector.close();
      throw e;
    }
    return connector;
  }

  /** Opens a connection of its own for one stream task. */
  public RedisSlidingLog open() {
    StatefulConnection<byte[], byte[]> connection;
    try {
      connection =
          cluster != null ? connectToEveryMaster() : standalone.connect(ByteArrayCodec.INSTANCE);
    } catch (RuntimeException e) {
      throw RedisErrors.failed(
          "cannot connect to Redis at " + settings.where() + ": " + e.getMessage(), e);
    }
    RedisSlidingLog log = new RedisSlidingLog(connection, this);
    open.add(log);
    return log;
  }

  /**
   * Opens the connection for global quotas, shared by the instance's stream threads.
   *
   * @throws LimiterUnavailableException if Redis cannot be reached
   */
  public RedisQuotaStore openQuotas() {
    StatefulConnection<byte[], byte[]> connection;
    try {
      connection =
          cluster != null
              ? cluster.connect(ByteArrayCodec.INSTANCE)
              : standalone.connect(ByteArrayCodec.INSTANCE);
    } catch (RuntimeException e) {
      throw RedisErrors.failed(
          "cannot connect to Redis at " + settings.where() + ": " + e.getMessage(), e);
    }
    return new RedisQuotaStore(
        connection, readScript(RedisQuotaStore.SCRIPT), settings.timeout(), where());
  }

  void closed(RedisSlidingLog log) {
    open.remove(log);
  }

  /**
   * Checks that sends can be decided again: Redis answers a PING (the server, or every cluster
   * master) over the probes' connection, and every task's connection has reconnected.
   *
   * <p>The probes' connection is opened at the first probe and kept, reconnecting on its own like
   * the tasks' (a probe while it is down fails), so that readiness probes and the outage prober
   * cost Redis no connection each. Probes run one at a time.
   *
   * @throws LimiterUnavailableException if a node cannot be reached or does not answer, or a task's
   *     connection is still down
   */
  public void ping() {
    synchronized (probeLock) {
      if (probe == null) {
        probe = open();
      }
      probe.ping();
    }
    long down = open.stream().filter(log -> !log.isConnected()).count();
    if (down > 0) {
      throw new LimiterUnavailableException(
          "Redis answers, " + down + " task connection(s) still reconnecting", null);
    }
  }

  /**
   * Connects to the cluster and opens the connection to every master now. Node connections open
   * lazily otherwise, and a command written to one that opens after the batch was flushed would
   * wait, unsent, until it timed out.
   */
  private StatefulRedisClusterConnection<byte[], byte[]> connectToEveryMaster() {
    StatefulRedisClusterConnection<byte[], byte[]> connection =
        cluster.connect(ByteArrayCodec.INSTANCE);
    try {
      for (RedisClusterNode node : connection.getPartitions()) {
        if (serving(node)) {
          connection.getConnection(node.getUri().getHost(), node.getUri().getPort());
        }
      }
    } catch (RuntimeException e) {
      // the connections to the masters that did answer would stay open, reconnecting, for good
      connection.close();
      throw e;
    }
    return connection;
  }

  /**
   * Whether a cluster node is a master that serves slots: after a failover the failed master stays
   * in the topology, flagged master and fail, with no slots, until the cluster forgets it; a
   * connection to it would fail forever.
   */
  static boolean serving(RedisClusterNode node) {
    return node.is(RedisClusterNode.NodeFlag.UPSTREAM) && !node.getSlots().isEmpty();
  }

  /** The Redis URIs this connector was configured with, passwords hidden: for messages. */
  public String where() {
    return settings.where();
  }

  SendcapConfig.Limiter settings() {
    return settings;
  }

  /** The caps script's source. */
  public byte[] script() {
    return script.clone();
  }

  /** The SHA-1 under which Redis caches the caps script. */
  public String sha() {
    return sha;
  }

  /** Connections of this client lost so far, other than by closing them. */
  long connectionsLost() {
    return connectionsLost.get();
  }

  Timer roundTrips() {
    return roundTrips;
  }

  void recordFlush(int callsInFlush, int decisionsInFlush) {
    calls.add(callsInFlush);
    decisions.add(decisionsInFlush);
    flushes.increment();
  }

  /** Script calls sent so far, over all connections. */
  public long calls() {
    return calls.sum();
  }

  /** Sends decided (or decided again after a NOSCRIPT) so far, over all connections. */
  public long decisions() {
    return decisions.sum();
  }

  /**
   * Times a task loaded the script again: ahead of its next batch after a connection was lost, or
   * after a node answered NOSCRIPT.
   */
  public long scriptReloads() {
    return reloads.sum();
  }

  void recordReload() {
    reloads.increment();
  }

  void recordSlotRetries(int retried) {
    slotRetries.add(retried);
  }

  /** Script calls sent again because Redis refused them while their slot moved (TRYAGAIN). */
  public long slotRetries() {
    return slotRetries.sum();
  }

  void recordWaitShortfall() {
    waitShortfalls.increment();
  }

  /**
   * Batches' writes on a master that fewer replicas than {@code cap.redis.wait-replicas}
   * acknowledged.
   */
  public long waitShortfalls() {
    return waitShortfalls.sum();
  }

  /** Pipelined flushes (network round trips) so far, over all connections. */
  public long flushes() {
    return flushes.sum();
  }

  @Override
  public void close() {
    synchronized (probeLock) {
      if (probe != null) {
        probe.close();
        probe = null;
      }
    }
    if (cluster != null) {
      cluster.shutdown();
    } else {
      standalone.shutdown();
    }
    resources.shutdown();
  }

  private static byte[] readScript(String resource) {
    try (InputStream in = RedisConnector.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new IllegalStateException("missing classpath resource " + resource);
      }
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
