package io.sendcap.limit;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The exact sliding-log {@link CapStore} on Redis: one sorted set per user, checked and recorded by
 * {@code lua/sliding_log.lua} called with EVALSHA.
 *
 * <p>A batch is written with auto-flush off and flushed once, so it costs one network round trip
 * per Redis node. Keys are {@code PREFIX:{USERID}}; the hash tag keeps every key of one user in one
 * cluster slot. If a node answers NOSCRIPT (script cache flushed, restart, failover), the script is
 * loaded again and the failed calls are retried once.
 */
public final class RedisSlidingLog implements CapStore {
  private final StatefulConnection<byte[], byte[]> connection;
  private final RedisScriptingAsyncCommands<byte[], byte[]> scripting;
  private final RedisConnector connector;
  private final Duration timeout;
  private final byte[] keyPrefix;
  private final long retentionMs;

  RedisSlidingLog(StatefulConnection<byte[], byte[]> connection, RedisConnector connector) {
    this.connection = connection;
    this.connector = connector;
    this.timeout = connector.settings().timeout();
    this.retentionMs = connector.settings().idempotencyRetention().toMillis();
    this.keyPrefix = (connector.settings().keyPrefix() + ":{").getBytes(StandardCharsets.US_ASCII);
    this.scripting = scripting(connection);
    connection.setAutoFlushCommands(false);
  }

  @SuppressWarnings("unchecked")
  private static RedisScriptingAsyncCommands<byte[], byte[]> scripting(
      StatefulConnection<byte[], byte[]> connection) {
    if (connection instanceof StatefulRedisClusterConnection<?, ?> cluster) {
      return ((StatefulRedisClusterConnection<byte[], byte[]>) cluster).async();
    }
    return ((StatefulRedisConnection<byte[], byte[]>) connection).async();
  }

  @Override
  public List<Decision> decide(List<CapRequest> requests) {
    List<RedisFuture<List<Object>>> futures = new ArrayList<>(requests.size());
    for (CapRequest request : requests) {
      futures.add(call(request));
    }
    flush(requests.size());
    List<Decision> decisions = new ArrayList<>(requests.size());
    List<Integer> noScript = new ArrayList<>();
    for (int i = 0; i < futures.size(); i++) {
      Decision decision = await(futures.get(i));
      if (decision == null) {
        noScript.add(i);
      }
      decisions.add(decision);
    }
    if (!noScript.isEmpty()) {
      retryAfterReload(requests, noScript, decisions);
    }
    return decisions;
  }

  private void retryAfterReload(
      List<CapRequest> requests, List<Integer> indexes, List<Decision> decisions) {
    loadScript();
    List<RedisFuture<List<Object>>> retries = new ArrayList<>(indexes.size());
    for (int i : indexes) {
      retries.add(call(requests.get(i)));
    }
    flush(indexes.size());
    for (int j = 0; j < retries.size(); j++) {
      Decision decision = await(retries.get(j));
      if (decision == null) {
        throw new LimiterUnavailableException(
            "Redis answered NOSCRIPT again right after SCRIPT LOAD", null);
      }
      decisions.set(indexes.get(j), decision);
    }
  }

  /** Loads the script into every node's script cache. */
  void loadScript() {
    RedisFuture<String> loaded = scripting.scriptLoad(connector.script());
    connection.flushCommands();
    try {
      String sha = loaded.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (!connector.sha().equals(sha)) {
        throw new IllegalStateException(
            "Redis returned SHA " + sha + " for the script, expected " + connector.sha());
      }
    } catch (ExecutionException | TimeoutException e) {
      throw unavailable("SCRIPT LOAD", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable("SCRIPT LOAD", e);
    }
  }

  private RedisFuture<List<Object>> call(CapRequest request) {
    ScriptCall call = encode(request);
    return scripting.evalsha(connector.sha(), ScriptOutputType.MULTI, call.keys(), call.args());
  }

  /**
   * The script calls that decide {@code requests}, for tools that drive the script without this
   * client (the limiter benchmark's server-side ceiling).
   */
  public List<ScriptCall> encode(List<CapRequest> requests) {
    return requests.stream().map(this::encode).toList();
  }

  private ScriptCall encode(CapRequest request) {
    Policy policy = request.policy();
    byte[][] args = new byte[4 + 2 * policy.caps().size()][];
    args[0] = ascii(request.now());
    args[1] = MessageIds.member(request.messageId());
    args[2] = ascii(policy.minInterval().toMillis());
    args[3] = ascii(Math.max(policy.horizon().toMillis(), retentionMs));
    int i = 4;
    for (Cap cap : policy.caps()) {
      args[i++] = ascii(cap.window().toMillis());
      args[i++] = ascii(cap.limit());
    }
    return new ScriptCall(new byte[][] {key(request.userId())}, args);
  }

  /** The key of a user's log. */
  byte[] key(long userId) {
    byte[] id = Long.toString(userId).getBytes(StandardCharsets.US_ASCII);
    byte[] key = new byte[keyPrefix.length + id.length + 1];
    System.arraycopy(keyPrefix, 0, key, 0, keyPrefix.length);
    System.arraycopy(id, 0, key, keyPrefix.length, id.length);
    key[key.length - 1] = '}';
    return key;
  }

  private void flush(int calls) {
    connection.flushCommands();
    connector.recordFlush(calls);
  }

  /** Returns the decision, or null if the node did not have the script. */
  private Decision await(RedisFuture<List<Object>> future) {
    try {
      return decision(future.get(timeout.toMillis(), TimeUnit.MILLISECONDS));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RedisNoScriptException) {
        return null;
      }
      throw unavailable("EVALSHA", e.getCause());
    } catch (TimeoutException e) {
      throw unavailable("EVALSHA", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable("EVALSHA", e);
    }
  }

  private static Decision decision(List<Object> reply) {
    int outcome = ((Long) reply.get(0)).intValue();
    int cap = ((Long) reply.get(1)).intValue();
    int count = ((Long) reply.get(2)).intValue();
    long next = (Long) reply.get(3);
    return switch (outcome) {
      case 0 -> new Decision(Decision.Outcome.ALLOWED, -1, 0, next);
      case 1 -> new Decision(Decision.Outcome.DUPLICATE, -1, 0, next);
      case 2 -> new Decision(Decision.Outcome.CAPPED, cap - 1, count, next);
      case 3 -> new Decision(Decision.Outcome.MIN_INTERVAL, -1, 0, next);
      default -> throw new IllegalStateException("unexpected script outcome " + outcome);
    };
  }

  private LimiterUnavailableException unavailable(String what, Throwable cause) {
    return new LimiterUnavailableException(
        what
            + " to Redis at "
            + connector.settings().uris()
            + " failed: "
            + (cause == null ? "no answer" : cause.getMessage()),
        cause);
  }

  private static byte[] ascii(long n) {
    return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
  }

  @Override
  public void close() {
    connection.close();
  }
}
