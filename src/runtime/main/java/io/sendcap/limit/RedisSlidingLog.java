package io.sendcap.limit;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.Partitions;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.ValueOutput;
import io.lettuce.core.protocol.CommandType;
import io.sendcap.config.SendcapConfig;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link CapStore} on Redis: one sorted set per user, holding the user's log of sends (the
 * exact sliding log, and the idempotency ids of every algorithm) and the counters of caps of the
 * other algorithms, checked and recorded by {@code lua/sliding_log.lua} called with EVALSHA.
 *
 * <p>A batch is split into calls of up to {@code cap.redis.sends-per-call} sends (on a cluster,
 * sends whose keys share a slot), written with auto-flush off and flushed once, so it costs one
 * network round trip per Redis node. Keys are {@code PREFIX{USERID}}, or {@code PREFIX{TAG}USERID}
 * with {@code cap.redis.key-buckets} (see {@link UserKeys}): the hash tag keeps every key of one
 * user in one cluster slot, and buckets put many users' keys in one slot, so that a call on a
 * cluster decides many sends.
 *
 * <p>Redis runs a connection's calls in order, and an EVALSHA it refuses with NOSCRIPT decides
 * nothing: a batch whose first calls were refused and whose later calls ran, because another client
 * loaded the script in between, would decide later sends of a user before earlier ones. So after a
 * connection of the client was lost (the server may have restarted or failed over, and lost the
 * script), the next batch of each log loads the script ahead of its calls, on the same connection.
 * If a node still answers NOSCRIPT (its script cache flushed while connected), the script is loaded
 * again and the refused calls are retried once.
 */
public final class RedisSlidingLog implements CapStore {
  private static final Logger LOG = LoggerFactory.getLogger(RedisSlidingLog.class);

  private final StatefulConnection<byte[], byte[]> connection;
  private final RedisClusterAsyncCommands<byte[], byte[]> scripting;
  private final byte[] sha;
  private final RedisConnector connector;
  private final Duration timeout;
  private final CallBuilder builder;
  private final int waitReplicas;
  private final long waitTimeoutMs;
  private final boolean cluster;

  /**
   * How many replicas the standalone master had at the last batch's ROLE; {@link #UNKNOWN} before
   * the first reply and after a failed one, which makes the next batch WAIT.
   */
  private volatile int masterReplicas = UNKNOWN;

  private static final int UNKNOWN = Integer.MAX_VALUE;

  /**
   * The connector's count of lost connections when this log last loaded the script over its own
   * connection; -1 before it first did. While it is behind, each batch loads the script ahead of
   * its calls, so that Redis has it before the first call whoever else loads it meanwhile.
   */
  private long scriptLoadedAt = -1;

  RedisSlidingLog(StatefulConnection<byte[], byte[]> connection, RedisConnector connector) {
    this.connection = connection;
    this.connector = connector;
    this.timeout = connector.settings().timeout();
    SendcapConfig.Limiter settings = connector.settings();
    this.builder =
        new CallBuilder(
            new UserKeys(settings.keyPrefix(), settings.keyBuckets()),
            settings.idempotencyRetention().toMillis(),
            settings.clock() == SendcapConfig.Clock.EVENT ? 2 * settings.maxSkew().toMillis() : 0,
            settings.sendsPerCall(),
            settings.cluster());
    this.scripting = scripting(connection);
    this.sha = connector.sha().getBytes(StandardCharsets.US_ASCII);
    this.waitReplicas = settings.waitReplicas();
    this.waitTimeoutMs = settings.waitTimeout().toMillis();
    this.cluster = connection instanceof StatefulRedisClusterConnection<?, ?>;
    connection.setAutoFlushCommands(false);
  }

  @SuppressWarnings("unchecked")
  private static RedisClusterAsyncCommands<byte[], byte[]> scripting(
      StatefulConnection<byte[], byte[]> connection) {
    if (connection instanceof StatefulRedisClusterConnection<?, ?> cluster) {
      return ((StatefulRedisClusterConnection<byte[], byte[]>) cluster).async();
    }
    return ((StatefulRedisConnection<byte[], byte[]>) connection).async();
  }

  @Override
  public Pending submit(List<CapRequest> requests) {
    return submit(requests, Deadline.NONE);
  }

  /**
   * Sends the batch's calls and flushes them once; waiting for the decisions, a NOSCRIPT reload and
   * the retry included, takes at most {@code cap.redis.timeout.ms} in all, and no longer than
   * {@code deadline}.
   */
  @Override
  public Pending submit(List<CapRequest> requests, Deadline deadline) {
    Deadline answered = earlier(deadline, Deadline.in(timeout));
    long lost = connector.connectionsLost();
    List<RedisFuture<String>> loads = lost == scriptLoadedAt ? List.of() : scriptLoads();
    List<CallBuilder.Call> calls = builder.calls(requests);
    List<RedisFuture<byte[]>> futures = new ArrayList<>(calls.size());
    // a command done before the flush was refused, the connection being down: no later call may go
    // out on the connection come back, to be decided before it
    boolean refused = loads.stream().anyMatch(RedisFuture::isDone);
    for (int i = 0; i < calls.size() && !refused; i++) {
      RedisFuture<byte[]> future = send(calls.get(i));
      futures.add(future);
      refused = future.isDone();
    }
    List<CallBuilder.Call> sent = calls.subList(0, futures.size());
    List<RedisFuture<Long>> waits = queueWaits();
    long flushed = System.nanoTime();
    flush(sent.size(), requests.size());
    flushWaits();
    CompletableFuture<Void> answers =
        CompletableFuture.allOf(
            futures.stream().map(f -> f.toCompletableFuture()).toArray(CompletableFuture[]::new));
    answers.whenComplete(
        (done, failed) ->
            connector.roundTrips().record(System.nanoTime() - flushed, TimeUnit.NANOSECONDS));
    // Everything the batch waits for, as one future: ready() asked each list, and a new instance's
    // first batch, with its script loads in a list of another class than the usual empty one,
    // threw away the compiled code ready() was inlined into (BENCHMARKS.md).
    CompletableFuture<?> settled =
        loads.isEmpty() && waits.isEmpty() ? answers : all(answers, loads, waits);
    return new Pending() {
      @Override
      public List<Decision> await() {
        if (!loads.isEmpty()) {
          awaited("SCRIPT LOAD", () -> awaitLoads(loads, answered));
          if (scriptLoadedAt >= 0) {
            connector.recordReload();
            LOG.info(
                "a connection to Redis at {} was lost; the script was loaded again ahead of a"
                    + " batch, so that Redis has it before the batch's first call",
                connector.settings().where());
          }
          scriptLoadedAt = lost;
        }
        awaitAll(answers, answered);
        return collect(sent, futures, waits, requests, answered);
      }

      @Override
      public boolean ready() {
        if (settled.isDone() || answered.passed()) {
          return true;
        }
        flushRedirects(flushed);
        return false;
      }
    };
  }

  private static CompletableFuture<Void> all(
      CompletableFuture<Void> answers,
      List<RedisFuture<String>> loads,
      List<RedisFuture<Long>> waits) {
    List<CompletableFuture<?>> all = new ArrayList<>();
    all.add(answers);
    loads.forEach(f -> all.add(f.toCompletableFuture()));
    waits.forEach(f -> all.add(f.toCompletableFuture()));
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new));
  }

  private Deadline earlier(Deadline given, Deadline own) {
    return given.remainingMillis(timeout) < own.remainingMillis(timeout) ? given : own;
  }

  /**
   * Reads the batch's answers into its decisions. A call refused because its slot is moving
   * (TRYAGAIN) is sent again until the deadline; one refused with NOSCRIPT, once after loading the
   * script. A send whose user's key Redis could not use is decided {@link
   * Decision.Outcome#KEY_REFUSED}, and the call's other sends as Redis decided them.
   *
   * @throws LimiterUnavailableException if a call failed otherwise, or was still refused at the
   *     deadline; it holds the decisions Redis made all the same ({@link
   *     LimiterUnavailableException#decided})
   */
  private List<Decision> collect(
      List<CallBuilder.Call> calls,
      List<RedisFuture<byte[]>> futures,
      List<RedisFuture<Long>> waits,
      List<CapRequest> requests,
      Deadline deadline) {
    Decision[] decisions = new Decision[requests.size()];
    List<CallBuilder.Call> noScript = new ArrayList<>();
    List<CallBuilder.Call> moving = new ArrayList<>(0); // refused while their slot moves
    Set<ByteBuffer> refusedKeys = null; // the keys of the calls refused with NOSCRIPT or TRYAGAIN
    int aheadOfRefused = 0;
    Throwable failure = null;
    for (int i = 0; i < calls.size(); i++) {
      CallBuilder.Call call = calls.get(i);
      byte[] reply;
      try {
        reply = await(futures.get(i), deadline);
      } catch (CallFailed f) {
        if (RedisErrors.kind(f.getCause()) == RedisErrors.Kind.RETRY) {
          moving.add(call);
          refusedKeys = withKeys(refusedKeys, call);
        } else if (failure == null) {
          failure = f.getCause();
        }
        continue;
      }
      if (reply == null) {
        noScript.add(call);
        refusedKeys = withKeys(refusedKeys, call);
      } else {
        if (refusedKeys != null && sharesAKey(call, refusedKeys)) {
          aheadOfRefused += call.requestIndexes().length;
        }
        failure = placed(call, reply, requests, decisions, failure);
      }
    }
    if (aheadOfRefused > 0) {
      LOG.error(
          "Redis at {} decided {} sends before earlier sends of the same users that it had refused"
              + " with NOSCRIPT (its script cache was emptied while the batch was on its way: SCRIPT"
              + " FLUSH, or a cluster node restarted during the batch, and another client loaded the"
              + " script again) or TRYAGAIN (their slot was moving to another node). Those users'"
              + " sends are not decided in input order; no window holds more than its cap.",
          connector.settings().where(),
          aheadOfRefused);
    }
    awaitWaits(waits, deadline);
    if (!noScript.isEmpty()) {
      retryAfterReload(noScript, requests, decisions, deadline);
      // the retried calls wrote after the WAITs above
      List<RedisFuture<Long>> again = queueWaits();
      flushWaits();
      awaitWaits(again, deadline);
    }
    if (!moving.isEmpty()) {
      failure = retryMoving(moving, requests, decisions, deadline, failure);
    }
    if (failure != null) {
      throw RedisErrors.failed(
          failedMessage("EVALSHA", failure), failure, Arrays.asList(decisions));
    }
    return Arrays.asList(decisions);
  }

  private static Set<ByteBuffer> withKeys(Set<ByteBuffer> keys, CallBuilder.Call call) {
    Set<ByteBuffer> with = keys == null ? new HashSet<>() : keys;
    for (byte[] key : call.script().keys()) {
      with.add(ByteBuffer.wrap(key));
    }
    return with;
  }

  /** The longest pause between two tries of calls whose slot is moving. */
  private static final long MAX_RETRY_PAUSE_MS = 50;

  /**
   * Sends the calls that Redis refused while their slot moved (TRYAGAIN: a call whose keys are
   * partly on the slot's old node and partly on its new one; Lettuce follows ASK and MOVED itself,
   * not TRYAGAIN) again until they are decided or the deadline passes, pausing between tries from 1
   * ms up to {@link #MAX_RETRY_PAUSE_MS} while the keys move. A refused call decided nothing.
   *
   * @return {@code failure}, or if there was none and a call failed otherwise or was still refused
   *     at the deadline, why
   */
  private Throwable retryMoving(
      List<CallBuilder.Call> moving,
      List<CapRequest> requests,
      Decision[] decisions,
      Deadline deadline,
      Throwable failure) {
    LOG.debug(
        "Redis at {} refused {} calls while their slot moves; sending them again",
        connector.settings().where(),
        moving.size());
    long pause = 1;
    Throwable refused = null;
    while (!moving.isEmpty()) {
      long left = deadline.remainingMillis(timeout);
      if (left == 0) {
        return failure != null ? failure : refused;
      }
      try {
        Thread.sleep(Math.min(pause, left)); // a backoff while the keys move, not a wait for them
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw unavailable("EVALSHA", e);
      }
      pause = Math.min(2 * pause, MAX_RETRY_PAUSE_MS);
      List<RedisFuture<byte[]>> retries = new ArrayList<>(moving.size());
      for (CallBuilder.Call call : moving) {
        retries.add(send(call));
      }
      flush(moving.size(), moving.stream().mapToInt(c -> c.requestIndexes().length).sum());
      connector.recordSlotRetries(moving.size());
      awaitAll(
          CompletableFuture.allOf(
              retries.stream().map(f -> f.toCompletableFuture()).toArray(CompletableFuture[]::new)),
          deadline);
      List<CallBuilder.Call> still = new ArrayList<>(0);
      for (int j = 0; j < retries.size(); j++) {
        try {
          byte[] reply = await(retries.get(j), deadline);
          if (reply == null) {
            failure = failure != null ? failure : new RedisNoScriptException("NOSCRIPT");
          } else {
            failure = placed(moving.get(j), reply, requests, decisions, failure);
          }
        } catch (CallFailed f) {
          if (RedisErrors.kind(f.getCause()) == RedisErrors.Kind.RETRY) {
            still.add(moving.get(j));
            refused = f.getCause();
          } else if (failure == null) {
            failure = f.getCause();
          }
        }
      }
      moving = still;
    }
    return failure;
  }

  /**
   * Places a call's decisions ({@link #place}); a send that Redis could not decide for a reason
   * other than its key (an ACL refusing the key, say) is left undecided.
   *
   * @return {@code failure}, or if there was none and a send was left undecided, why
   */
  private static Throwable placed(
      CallBuilder.Call call,
      byte[] reply,
      List<CapRequest> requests,
      Decision[] decisions,
      Throwable failure) {
    String refused = place(call, reply, requests, decisions);
    return failure != null || refused == null
        ? failure
        : new RedisCommandExecutionException(refused);
  }

  private static boolean sharesAKey(CallBuilder.Call call, Set<ByteBuffer> keys) {
    for (byte[] key : call.script().keys()) {
      if (keys.contains(ByteBuffer.wrap(key))) {
        return true;
      }
    }
    return false;
  }

  /** The script calls that decide {@code requests}, as this log would send them. */
  public List<ScriptCall> encode(List<CapRequest> requests) {
    return builder.calls(requests).stream().map(CallBuilder.Call::script).toList();
  }

  private void retryAfterReload(
      List<CallBuilder.Call> failed,
      List<CapRequest> requests,
      Decision[] decisions,
      Deadline deadline) {
    LOG.info(
        "Redis at {} answered NOSCRIPT (script cache flushed, restart or failover);"
            + " loading the script again and retrying {} calls",
        connector.settings().where(),
        failed.size());
    loadScript(deadline);
    connector.recordReload();
    List<RedisFuture<byte[]>> retries = new ArrayList<>(failed.size());
    for (CallBuilder.Call call : failed) {
      retries.add(send(call));
    }
    flush(failed.size(), failed.stream().mapToInt(c -> c.requestIndexes().length).sum());
    for (int j = 0; j < retries.size(); j++) {
      byte[] reply;
      try {
        reply = await(retries.get(j), deadline);
      } catch (CallFailed f) {
        throw unavailable("EVALSHA", f.getCause());
      }
      if (reply == null) {
        throw new LimiterUnavailableException(
            "Redis answered NOSCRIPT again right after SCRIPT LOAD", null);
      }
      String refused = place(failed.get(j), reply, requests, decisions);
      if (refused != null) {
        throw unavailable("EVALSHA", new RedisCommandExecutionException(refused));
      }
    }
  }

  private RedisFuture<byte[]> send(CallBuilder.Call call) {
    // what scripting.evalsha(sha, VALUE, keys, args) sends, its arguments written in one piece
    return scripting.dispatch(
        CommandType.EVALSHA,
        new ValueOutput<>(ByteArrayCodec.INSTANCE),
        new EvalShaArgs(sha, call.script()));
  }

  /**
   * Puts the decisions of one call's reply where their requests are. The reply is laid out in
   * {@code lua/sliding_log.lua}: per send an outcome byte, and after a capped send's the cap, its
   * count and the time the user is next eligible, after a minimum interval's that time, after a
   * refused key's Redis's error.
   *
   * @return the first error of Redis that concerns no key (an ACL refusing one, say), whose send is
   *     left undecided; null if there is none
   */
  private static String place(
      CallBuilder.Call call, byte[] reply, List<CapRequest> requests, Decision[] decisions) {
    int[] indexes = call.requestIndexes();
    ByteBuffer in = ByteBuffer.wrap(reply);
    String refused = null;
    try {
      for (int k = 0; k < indexes.length; k++) {
        long now = requests.get(indexes[k]).now();
        Decision decision = decision(in, now, call.capIndexes().get(k));
        if (decision.outcome() == Decision.Outcome.KEY_REFUSED
            && RedisErrors.kindOfReply(decision.reason()) != RedisErrors.Kind.KEY) {
          refused = refused == null ? decision.reason() : refused;
          decision = null;
        }
        decisions[indexes[k]] = decision;
      }
    } catch (BufferUnderflowException e) {
      throw outOfStep(reply, indexes.length);
    }
    if (in.hasRemaining()) {
      throw outOfStep(reply, indexes.length);
    }
    return refused;
  }

  private static IllegalStateException outOfStep(byte[] reply, int sends) {
    return new IllegalStateException(
        "Redis answered "
            + reply.length
            + " bytes to a script call deciding "
            + sends
            + " sends, which is not their decisions: the connection's replies are out of step"
            + " with its calls");
  }

  /** Loads the script into every node's script cache. */
  void loadScript() {
    loadScript(Deadline.NONE);
  }

  private void loadScript(Deadline deadline) {
    long lost = connector.connectionsLost();
    // With Redis Cluster, SCRIPT LOAD goes to every master over node connections that may open
    // only after flushCommands() returned; with auto-flush off it would wait there unsent.
    autoFlushed("SCRIPT LOAD", () -> awaitLoads(scriptLoads(), deadline));
    scriptLoadedAt = lost;
  }

  private void awaitLoads(List<RedisFuture<String>> loads, Deadline deadline)
      throws ExecutionException, TimeoutException, InterruptedException {
    for (RedisFuture<String> loaded : loads) {
      String sha = loaded.get(deadline.remainingMillis(timeout), TimeUnit.MILLISECONDS);
      if (!connector.sha().equals(sha)) {
        throw new IllegalStateException(
            "Redis returned SHA " + sha + " for the script, expected " + connector.sha());
      }
    }
  }

  /** Calls that wait for Redis's answers. */
  @FunctionalInterface
  private interface Awaited {
    void run() throws ExecutionException, TimeoutException, InterruptedException;
  }

  /**
   * Runs {@code calls} with auto-flush on, each command sent as it is queued, as the calls outside
   * a batch need; Redis failing or not answering them makes the limiter unavailable for {@code
   * what}.
   */
  private void autoFlushed(String what, Awaited calls) {
    connection.setAutoFlushCommands(true);
    try {
      awaited(what, calls);
    } finally {
      connection.setAutoFlushCommands(false);
    }
  }

  /** Runs {@code calls}; Redis failing or not answering them makes the limiter unavailable. */
  private void awaited(String what, Awaited calls) {
    try {
      calls.run();
    } catch (ExecutionException | TimeoutException e) {
      throw unavailable(what, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(what, e);
    }
  }

  /**
   * Queues, after the batch's calls on each connection, a WAIT for {@code cap.redis.wait-replicas}
   * replicas on every master that has that many: WAIT on a master with fewer, such as a replica
   * just promoted, would only take its whole timeout, so its writes are counted as a shortfall at
   * once. A cluster's masters are counted from its topology; a standalone master (Sentinel's
   * included) from a ROLE queued with each batch, whose reply decides the next batch. Empty when
   * not waiting.
   */
  @SuppressWarnings("unchecked")
  private List<RedisFuture<Long>> queueWaits() {
    if (waitReplicas == 0) {
      return List.of();
    }
    if (!(connection instanceof StatefulRedisClusterConnection<?, ?> c)) {
      RedisAsyncCommands<byte[], byte[]> master =
          ((StatefulRedisConnection<byte[], byte[]>) connection).async();
      boolean enough = masterReplicas >= waitReplicas;
      master
          .role()
          .whenComplete(
              (role, failed) -> masterReplicas = failed == null ? replicasOf(role) : UNKNOWN);
      if (!enough) {
        connector.recordWaitShortfall();
        return List.of();
      }
      return List.of(master.waitForReplication(waitReplicas, waitTimeoutMs));
    }
    StatefulRedisClusterConnection<byte[], byte[]> cluster =
        (StatefulRedisClusterConnection<byte[], byte[]>) c;
    List<RedisFuture<Long>> waits = new ArrayList<>();
    Partitions partitions = cluster.getPartitions();
    for (RedisClusterNode node : partitions) {
      if (!RedisConnector.serving(node)) {
        continue;
      }
      long replicas =
          partitions.stream()
              .filter(r -> node.getNodeId().equals(r.getSlaveOf()))
              .filter(r -> !r.is(RedisClusterNode.NodeFlag.FAIL))
              .count();
      if (replicas < waitReplicas) {
        connector.recordWaitShortfall();
      } else {
        waits.add(
            cluster
                .getConnection(node.getUri().getHost(), node.getUri().getPort())
                .async()
                .waitForReplication(waitReplicas, waitTimeoutMs));
      }
    }
    return waits;
  }

  /** The replicas a ROLE reply lists: those of a master, none for a replica. */
  static int replicasOf(List<Object> role) {
    Object first = role.isEmpty() ? "" : role.get(0);
    String name =
        first instanceof byte[] bytes
            ? new String(bytes, StandardCharsets.US_ASCII)
            : String.valueOf(first);
    boolean master = name.equals("master");
    return master && role.size() > 2 && role.get(2) instanceof List<?> replicas
        ? replicas.size()
        : 0;
  }

  /**
   * Sends a ROLE and a WAIT that waits for nothing to a standalone master, when {@code
   * cap.redis.wait-replicas} asks to WAIT: a Redis user whose ACL does not allow them fails
   * start-up here rather than at every batch.
   *
   * @throws LimiterUnavailableException if Redis refuses or does not answer
   */
  @SuppressWarnings("unchecked")
  void checkWaitCommands() {
    if (waitReplicas == 0 || connection instanceof StatefulRedisClusterConnection<?, ?>) {
      return;
    }
    RedisAsyncCommands<byte[], byte[]> master =
        ((StatefulRedisConnection<byte[], byte[]>) connection).async();
    autoFlushed(
        "ROLE or WAIT",
        () -> {
          master.role().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
          master.waitForReplication(0, 0).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        });
  }

  /**
   * Flushes a cluster's node connections too: one opened after the cluster connection's flush (a
   * promoted replica's) would otherwise hold its WAIT until the next batch.
   */
  @SuppressWarnings("unchecked")
  private void flushWaits() {
    if (waitReplicas > 0 && connection instanceof StatefulRedisClusterConnection<?, ?> c) {
      StatefulRedisClusterConnection<byte[], byte[]> cluster =
          (StatefulRedisClusterConnection<byte[], byte[]>) c;
      for (RedisClusterNode node : cluster.getPartitions()) {
        if (RedisConnector.serving(node)) {
          cluster.getConnection(node.getUri().getHost(), node.getUri().getPort()).flushCommands();
        }
      }
    } else if (waitReplicas > 0) {
      connection.flushCommands();
    }
  }

  /** Counts each WAIT that ended with fewer replicas than asked. */
  private void awaitWaits(List<RedisFuture<Long>> waits, Deadline deadline) {
    for (RedisFuture<Long> wait : waits) {
      try {
        Long acknowledged = wait.get(deadline.remainingMillis(timeout), TimeUnit.MILLISECONDS);
        if (acknowledged == null || acknowledged < waitReplicas) {
          connector.recordWaitShortfall();
        }
      } catch (ExecutionException e) {
        throw unavailable("WAIT", e.getCause());
      } catch (TimeoutException e) {
        throw unavailable("WAIT", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw unavailable("WAIT", e);
      }
    }
  }

  /**
   * SCRIPT LOAD on the server, or on every cluster master that serves slots (the cluster client's
   * own broadcast also tries a failed master that a promoted replica replaced, and fails).
   *
   * @throws LimiterUnavailableException if a master's connection cannot be opened
   */
  @SuppressWarnings("unchecked")
  private List<RedisFuture<String>> scriptLoads() {
    if (connection instanceof StatefulRedisClusterConnection<?, ?> c) {
      StatefulRedisClusterConnection<byte[], byte[]> cluster =
          (StatefulRedisClusterConnection<byte[], byte[]>) c;
      List<RedisFuture<String>> loads = new ArrayList<>();
      try {
        for (RedisClusterNode node : cluster.getPartitions()) {
          if (RedisConnector.serving(node)) {
            loads.add(
                cluster
                    .getConnection(node.getUri().getHost(), node.getUri().getPort())
                    .async()
                    .scriptLoad(connector.script()));
          }
        }
      } catch (RedisException e) {
        throw unavailable("SCRIPT LOAD", e);
      }
      return loads;
    }
    return List.of(scripting.scriptLoad(connector.script()));
  }

  /**
   * Calls the script once with no sends, which decides and writes nothing: a Redis user whose ACL
   * does not allow EVALSHA fails start-up here rather than at the first batch.
   *
   * @throws LimiterUnavailableException if Redis refuses or does not answer
   */
  void callScriptWithNoSends() {
    autoFlushed(
        "EVALSHA",
        () ->
            scripting
                .evalsha(connector.sha(), ScriptOutputType.VALUE, new byte[0][], NO_SENDS_ARGS)
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS));
  }

  /** The script's arguments for no sends: where the first send's would start, and a time floor. */
  private static final byte[][] NO_SENDS_ARGS = {
    "3".getBytes(StandardCharsets.US_ASCII), "0".getBytes(StandardCharsets.US_ASCII)
  };

  /**
   * Sends a PING to every node this connection writes to: the server, or every cluster master.
   *
   * @throws LimiterUnavailableException if one does not answer
   */
  void ping() {
    connection.setAutoFlushCommands(true);
    try {
      if (connection instanceof StatefulRedisClusterConnection<?, ?> cluster) {
        for (RedisClusterNode node : cluster.getPartitions()) {
          if (RedisConnector.serving(node)) {
            cluster.getConnection(node.getUri().getHost(), node.getUri().getPort()).sync().ping();
          }
        }
      } else {
        ((StatefulRedisConnection<?, ?>) connection).sync().ping();
      }
    } catch (RedisException e) {
      throw unavailable("PING", e);
    } finally {
      connection.setAutoFlushCommands(false);
    }
  }

  private void flush(int calls, int decisions) {
    connection.flushCommands();
    connector.recordFlush(calls, decisions);
  }

  /**
   * Waits until every call of a batch has its answer or has failed, at most until {@code deadline};
   * which did what, {@link #collect} reads. Waiting for the calls one by one instead woke this
   * thread for each reply that came in while it waited, and the client's thread to wake it. On a
   * cluster, a batch not answered within {@link #REDIRECT_FLUSH_MS} flushes its connection again,
   * for the calls Lettuce redirected.
   */
  private void awaitAll(CompletableFuture<?> answers, Deadline deadline) {
    long since = System.nanoTime();
    try {
      while (true) {
        long left = deadline.remainingMillis(timeout);
        try {
          answers.get(cluster ? Math.min(left, REDIRECT_FLUSH_MS) : left, TimeUnit.MILLISECONDS);
          return;
        } catch (TimeoutException e) {
          if (!cluster || deadline.remainingMillis(timeout) == 0) {
            return;
          }
          flushRedirects(since);
        }
      }
    } catch (ExecutionException e) {
      // a call failed (refused with NOSCRIPT, say): collect says which
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable("EVALSHA", e);
    }
  }

  /**
   * How long a cluster batch waits for its answers before flushing its connection again: Lettuce
   * follows a MOVED or ASK (a slot that moved or is moving) by writing the call again on the
   * connection of another node, which with auto-flush off holds it until the next flush.
   */
  private static final long REDIRECT_FLUSH_MS = 20;

  /**
   * Flushes a cluster connection whose batch, flushed at {@code since} (nanoTime), has waited
   * {@link #REDIRECT_FLUSH_MS} or longer: the calls Lettuce wrote again after a redirect go out.
   */
  private void flushRedirects(long since) {
    if (cluster && System.nanoTime() - since >= REDIRECT_FLUSH_MS * 1_000_000) {
      connection.flushCommands();
    }
  }

  /**
   * Returns the reply, or null if the node did not have the script.
   *
   * @throws CallFailed if Redis answered with another error, or not by the deadline
   */
  private byte[] await(RedisFuture<byte[]> future, Deadline deadline) throws CallFailed {
    try {
      return future.get(deadline.remainingMillis(timeout), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RedisNoScriptException) {
        return null;
      }
      throw new CallFailed(e.getCause());
    } catch (TimeoutException e) {
      throw new CallFailed(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable("EVALSHA", e);
    }
  }

  /** One call of a batch failed: Redis answered with an error, or not in time. */
  private static final class CallFailed extends Exception {
    private static final long serialVersionUID = 1L;

    CallFailed(Throwable cause) {
      super(null, cause, false, false);
    }
  }

  private static Decision decision(ByteBuffer in, long now, int[] capIndexes) {
    int outcome = in.get();
    return switch (outcome) {
      case 0 -> new Decision(Decision.Outcome.ALLOWED, -1, 0, now);
      case 1 -> new Decision(Decision.Outcome.DUPLICATE, -1, 0, now);
      case 2 -> {
        int cap = Short.toUnsignedInt(in.getShort());
        int count = in.getInt();
        yield new Decision(Decision.Outcome.CAPPED, capIndexes[cap - 1], count, in.getLong());
      }
      case 3 -> new Decision(Decision.Outcome.MIN_INTERVAL, -1, 0, in.getLong());
      case 4 -> new Decision(Decision.Outcome.NOT_A_REPLAY, -1, 0, now);
      case 5 -> {
        byte[] error = new byte[Byte.toUnsignedInt(in.get())];
        in.get(error);
        yield Decision.keyRefused(new String(error, StandardCharsets.UTF_8), now);
      }
      default -> throw new IllegalStateException("unexpected script outcome " + outcome);
    };
  }

  private LimiterUnavailableException unavailable(String what, Throwable cause) {
    return RedisErrors.failed(failedMessage(what, cause), cause);
  }

  private String failedMessage(String what, Throwable cause) {
    return what
        + " to Redis at "
        + connector.settings().where()
        + " failed: "
        + (cause == null ? "no answer" : RedisErrors.describe(cause));
  }

  /** Whether the connection is up (Lettuce reconnects a lost one on its own). */
  boolean isConnected() {
    return connection.isOpen();
  }

  @Override
  public void close() {
    connector.closed(this);
    connection.close();
  }
}
