package io.sendcap.limit;

import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisScriptingAsyncCommands;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The counters of global caps in Redis, changed by the {@code quota.lua} script with EVALSHA over
 * one connection that every stream thread of the instance shares (Lettuce connections are
 * thread-safe). A node that answers NOSCRIPT gets the script again and the call is retried once.
 * Reservations wait for their answer (a send's fate depends on it); releases do not (nobody waits
 * for tokens given back, and an unreachable Redis must not stall the stream threads that give
 * them).
 */
public final class RedisQuotaStore implements QuotaStore {
  /** The classpath resource of the quota script. */
  static final String SCRIPT = "/lua/quota.lua";

  private final StatefulConnection<byte[], byte[]> connection;
  private final RedisScriptingAsyncCommands<byte[], byte[]> scripting;
  private final byte[] script;
  private final String sha;
  private final Duration timeout;
  private final String uris;

  @SuppressWarnings("unchecked")
  RedisQuotaStore(
      StatefulConnection<byte[], byte[]> connection, byte[] script, Duration timeout, String uris) {
    this.connection = connection;
    this.scripting =
        connection instanceof StatefulRedisClusterConnection<?, ?> cluster
            ? ((StatefulRedisClusterConnection<byte[], byte[]>) cluster).async()
            : ((StatefulRedisConnection<byte[], byte[]>) connection).async();
    this.script = script;
    this.sha = Scripts.sha1(script);
    this.timeout = timeout;
    this.uris = uris;
  }

  @Override
  public long reserve(String key, long want, long limit, long ttlMillis, Deadline deadline) {
    return call(key, want, limit, ttlMillis, deadline).get(0);
  }

  @Override
  public CompletionStage<Void> release(String key, long tokens) {
    byte[][] keys = {key.getBytes(StandardCharsets.UTF_8)};
    byte[][] args = {bytes(-tokens), bytes(0), bytes(0)};
    CompletableFuture<List<Long>> first =
        scripting
            .<List<Long>>evalsha(sha, ScriptOutputType.MULTI, keys, args)
            .toCompletableFuture();
    return first
        .<CompletionStage<List<Long>>>handle(
            (reply, failed) -> {
              if (failed == null) {
                return CompletableFuture.completedFuture(reply);
              }
              if (unwrap(failed) instanceof RedisNoScriptException) {
                return scripting
                    .scriptLoad(script)
                    .thenCompose(s -> scripting.evalsha(sha, ScriptOutputType.MULTI, keys, args));
              }
              return CompletableFuture.failedFuture(unavailable(unwrap(failed)));
            })
        .thenCompose(s -> s)
        .<Void>thenApply(reply -> null)
        .exceptionally(
            failed -> {
              Throwable cause = unwrap(failed);
              throw cause instanceof LimiterUnavailableException u ? u : unavailable(cause);
            });
  }

  private static Throwable unwrap(Throwable t) {
    return t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
  }

  private List<Long> call(String key, long tokens, long limit, long ttlMillis, Deadline deadline) {
    byte[][] keys = {key.getBytes(StandardCharsets.UTF_8)};
    byte[][] args = {bytes(tokens), bytes(limit), bytes(ttlMillis)};
    try {
      return await(scripting.evalsha(sha, ScriptOutputType.MULTI, keys, args), deadline);
    } catch (RedisNoScriptException e) {
      await(scripting.scriptLoad(script), deadline);
      return await(scripting.evalsha(sha, ScriptOutputType.MULTI, keys, args), deadline);
    }
  }

  private static byte[] bytes(long n) {
    return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
  }

  private <T> T await(RedisFuture<T> future, Deadline deadline) {
    try {
      return future.get(deadline.remainingMillis(timeout), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RedisNoScriptException noScript) {
        throw noScript;
      }
      throw unavailable(e.getCause());
    } catch (TimeoutException e) {
      throw unavailable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unavailable(e);
    }
  }

  private LimiterUnavailableException unavailable(Throwable cause) {
    return RedisErrors.failed(
        "global quota call to Redis at " + uris + " failed: " + cause.getMessage(), cause);
  }

  @Override
  public void close() {
    connection.close();
  }
}
