package io.sendcap.limit;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The instance's share of the global caps: tokens reserved from Redis in batches and handed out to
 * sends locally, so that a hot counter (every send of a blast counts in it) costs Redis one call
 * per batch, not one per send.
 *
 * <p>Per counter, at most one reservation is in flight at a time. A thread that needs tokens takes
 * what the instance holds; if that is not enough it claims its share of the reservation in flight,
 * or starts one sized for the counter's batch or its need, whichever is larger; what does not fit
 * in the reservation in flight is asked of Redis directly. A thread whose share comes back short
 * (Redis granted the reservation only in part) asks Redis directly for the rest too, so a request
 * is refused only when Redis, asked after the request began, had no token left that no instance had
 * reserved: never on the word of an older answer.
 *
 * <p>The batch grows (doubles, up to the cap's {@code max-batch}) each time a reservation has been
 * used up, and shrinks (halves, down to 1) each time tokens were left unused when their lease
 * ended; unused tokens then go back to Redis, so they are not counted as sent and other instances
 * can have them. A lease lasts {@code lease}, and under the wall clock never past the end of its
 * window.
 */
public final class GlobalQuotas implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GlobalQuotas.class);

  /**
   * One counter: a global cap's scope (a campaign, a channel, or all) in one fixed window.
   *
   * @param cap the global cap's name
   * @param scope the campaign, the channel, or {@code all}
   * @param windowStart the window's start, epoch ms (a multiple of its length)
   * @param windowMillis the window's length
   */
  public record Key(String cap, String scope, long windowStart, long windowMillis) {
    /** The key of the window holding {@code time} (epoch ms). */
    public static Key of(String cap, String scope, long time, long windowMillis) {
      return new Key(cap, scope, Math.floorDiv(time, windowMillis) * windowMillis, windowMillis);
    }

    /** The window's end, epoch ms (exclusive). */
    public long windowEnd() {
      return windowStart + windowMillis;
    }
  }

  private final QuotaStore store;
  private final String keyPrefix;
  private final InstantSource wallClock;
  private final long leaseMillis;
  private final Map<Key, Bucket> buckets = new ConcurrentHashMap<>();
  private final LongAdder reserveCalls = new LongAdder();
  private final LongAdder releaseCalls = new LongAdder();
  private final LongAdder reserved = new LongAdder();
  private final LongAdder released = new LongAdder();
  private final LongAdder lost = new LongAdder();

  /**
   * @param store where the counters live
   * @param keyPrefix the prefix of every Redis key sendcap writes
   * @param wallClock the clock of leases
   * @param lease how long reserved tokens are held before unused ones go back
   * @param metrics where the calls and tokens are counted
   */
  public GlobalQuotas(
      QuotaStore store,
      String keyPrefix,
      InstantSource wallClock,
      Duration lease,
      MeterRegistry metrics) {
    this.store = store;
    this.keyPrefix = keyPrefix;
    this.wallClock = wallClock;
    this.leaseMillis = lease.toMillis();
    FunctionCounter.builder("sendcap.global.redis.calls", reserveCalls, LongAdder::sum)
        .description("Redis calls of the global caps")
        .tag("kind", "reserve")
        .register(metrics);
    FunctionCounter.builder("sendcap.global.redis.calls", releaseCalls, LongAdder::sum)
        .description("Redis calls of the global caps")
        .tag("kind", "release")
        .register(metrics);
    for (var e : Map.of("reserved", reserved, "released", released, "lost", lost).entrySet()) {
      FunctionCounter.builder("sendcap.global.tokens", e.getValue(), LongAdder::sum)
          .description(
              "Tokens of global caps reserved from Redis, given back unused, or unused and not"
                  + " given back (Redis unreachable)")
          .tag("event", e.getKey())
          .register(metrics);
    }
  }

  /** Per counter: the tokens held, their lease, the batch size and the reservation in flight. */
  private static final class Bucket {
    long available;
    long leaseEnd;
    int batch = 1;
    boolean reservedBefore;
    boolean expiredUnused;
    Reservation inFlight;
    long lastUsed;
    boolean dropped;
  }

  /** A reservation on its way to Redis, and the shares of it that threads have claimed. */
  private static final class Reservation {
    final long size;
    long claimed;
    private boolean done;
    private long granted;
    private RuntimeException failure;

    Reservation(long size) {
      this.size = size;
    }

    synchronized void complete(long tokens) {
      granted = tokens;
      done = true;
      notifyAll();
    }

    synchronized void fail(RuntimeException e) {
      failure = e;
      done = true;
      notifyAll();
    }

    synchronized long await() {
      boolean interrupted = false;
      while (!done) {
        try {
          wait();
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
      if (failure != null) {
        throw failure;
      }
      return granted;
    }
  }

  /**
   * Takes up to {@code n} tokens of a counter.
   *
   * @param limit the window's limit
   * @param maxBatch the most tokens one reservation asks for beyond the need at hand
   * @return the tokens taken: fewer than {@code n} only if Redis, asked after this call began, had
   *     none left unreserved
   * @throws LimiterUnavailableException if Redis cannot be reached
   */
  public long acquire(Key key, long limit, int maxBatch, long n) {
    return acquire(key, limit, maxBatch, n, Deadline.NONE);
  }

  /**
   * Takes up to {@code n} tokens of a counter, as {@link #acquire(Key, long, int, long)} does, with
   * Redis's answers due by {@code deadline}. A share of another thread's reservation is waited for
   * as long as that reservation's own call lasts.
   */
  public long acquire(Key key, long limit, int maxBatch, long n, Deadline deadline) {
    while (true) {
      Bucket b = buckets.computeIfAbsent(key, k -> new Bucket());
      long now = wallClock.millis();
      long taken;
      long direct;
      long expiredTokens = 0;
      Reservation join = null;
      Reservation own = null;
      long claimFrom = 0;
      long claim = 0;
      synchronized (b) {
        if (b.dropped) {
          continue;
        }
        b.lastUsed = now;
        if (b.available > 0 && now >= b.leaseEnd) {
          expiredTokens = b.available;
          b.available = 0;
          b.batch = Math.max(1, b.batch / 2);
          b.expiredUnused = true;
        }
        taken = Math.min(n, b.available);
        b.available -= taken;
        long need = n - taken;
        if (need > 0 && b.inFlight != null) {
          claim = Math.min(need, b.inFlight.size - b.inFlight.claimed);
          if (claim > 0) {
            join = b.inFlight;
            claimFrom = join.claimed;
            join.claimed += claim;
            need -= claim;
          }
        } else if (need > 0) {
          if (b.reservedBefore && !b.expiredUnused) {
            b.batch = (int) Math.min(maxBatch, 2L * b.batch); // the last batch was used up
          }
          b.expiredUnused = false;
          b.batch = Math.min(b.batch, maxBatch);
          b.reservedBefore = true;
          own = new Reservation(Math.max(b.batch, need));
          own.claimed = need;
          b.inFlight = own;
          join = own;
          claim = need;
          need = 0;
        }
        direct = need;
      }
      giveBackToRedis(key, expiredTokens);
      long got = taken;
      try {
        if (own != null) {
          reserveFor(b, key, limit, own, now, deadline);
        }
        if (join != null) {
          long share = Math.max(0, Math.min(claim, join.await() - claimFrom));
          got += share;
          direct += claim - share;
        }
        if (direct > 0) {
          long granted = reserve(key, direct, limit, now, deadline);
          got += granted;
          if (granted < direct) {
            synchronized (b) { // tokens another thread's reservation brought in meanwhile
              long late = Math.min(direct - granted, b.available);
              b.available -= late;
              got += late;
            }
          }
        }
      } catch (RuntimeException e) {
        giveBack(key, got); // what was taken before Redis failed goes back, not astray
        throw e;
      }
      return got;
    }
  }

  private void reserveFor(
      Bucket b, Key key, long limit, Reservation own, long now, Deadline deadline) {
    long granted;
    try {
      granted = reserve(key, own.size, limit, now, deadline);
    } catch (RuntimeException e) {
      synchronized (b) {
        b.inFlight = null;
      }
      own.fail(e);
      throw e;
    }
    synchronized (b) {
      b.inFlight = null;
      long spare = granted - own.claimed;
      if (spare > 0) {
        b.available += spare;
        b.leaseEnd = leaseEnd(key, now);
      }
    }
    own.complete(granted);
  }

  private long reserve(Key key, long want, long limit, long now, Deadline deadline) {
    reserveCalls.increment();
    long ttl = Math.max(key.windowEnd() - now, key.windowMillis()) + leaseMillis;
    long granted = store.reserve(redisKey(key), want, limit, ttl, deadline);
    reserved.add(granted);
    return granted;
  }

  private long leaseEnd(Key key, long now) {
    long end = now + leaseMillis;
    return key.windowEnd() > now ? Math.min(end, key.windowEnd()) : end;
  }

  /**
   * Returns tokens taken and not used to the instance's share, or to Redis (without waiting) if the
   * counter has been forgotten meanwhile.
   */
  public void giveBack(Key key, long n) {
    if (n <= 0) {
      return;
    }
    Bucket b = buckets.get(key);
    if (b == null) {
      giveBackToRedis(key, n);
      return;
    }
    synchronized (b) {
      if (!b.dropped) {
        if (b.available == 0) {
          b.leaseEnd = leaseEnd(key, wallClock.millis());
        }
        b.available += n;
        return;
      }
    }
    giveBackToRedis(key, n);
  }

  /**
   * Gives back to Redis the tokens whose lease has ended (without waiting for Redis), and forgets
   * counters unused for a lease; called regularly by the stream threads.
   */
  public void sweep() {
    long now = wallClock.millis();
    for (Map.Entry<Key, Bucket> e : buckets.entrySet()) {
      Bucket b = e.getValue();
      long unused = 0;
      synchronized (b) {
        if (b.available > 0 && now >= b.leaseEnd) {
          unused = b.available;
          b.available = 0;
          b.batch = Math.max(1, b.batch / 2);
          b.expiredUnused = true;
        }
        if (b.available == 0 && b.inFlight == null && now - b.lastUsed > leaseMillis) {
          b.dropped = true;
          buckets.remove(e.getKey(), b);
        }
      }
      giveBackToRedis(e.getKey(), unused);
    }
  }

  /**
   * Counts tokens that are neither surely used nor given back: they were held by sends whose
   * per-user call failed, so Redis may have logged those sends, and a send delivered later as a
   * replay of one must find its token still counted. They stay counted: fewer sends allowed, never
   * more.
   */
  public void forfeit(Key key, long n) {
    if (n > 0) {
      lost.add(n);
    }
  }

  /**
   * Gives unused tokens back to their counter (a no-op in Redis once the counter has expired),
   * without waiting for Redis. If Redis cannot be reached they stay counted: fewer sends allowed,
   * never more.
   */
  private CompletableFuture<?> giveBackToRedis(Key key, long tokens) {
    if (tokens <= 0) {
      return CompletableFuture.completedFuture(null);
    }
    releaseCalls.increment();
    try {
      return store
          .release(redisKey(key), tokens)
          .toCompletableFuture()
          .whenComplete(
              (done, failed) -> {
                if (failed == null) {
                  released.add(tokens);
                } else {
                  lost.add(tokens);
                  LOG.warn(
                      "could not give {} unused tokens of {} back: {}",
                      tokens,
                      key,
                      failed.getMessage());
                }
              });
    } catch (RuntimeException e) {
      lost.add(tokens);
      LOG.warn("could not give {} unused tokens of {} back: {}", tokens, key, e.getMessage());
      return CompletableFuture.completedFuture(null);
    }
  }

  private String redisKey(Key key) {
    return keyPrefix + "g{" + key.cap() + ":" + key.scope() + "}:" + key.windowStart();
  }

  /** Redis calls that reserved tokens, so far. */
  public long reserveCalls() {
    return reserveCalls.sum();
  }

  /** Redis calls that gave tokens back, so far. */
  public long releaseCalls() {
    return releaseCalls.sum();
  }

  /** Gives every token held back to Redis, waits for Redis to have them, and closes the store. */
  @Override
  public void close() {
    List<CompletableFuture<?>> releases = new ArrayList<>();
    for (Map.Entry<Key, Bucket> e : buckets.entrySet()) {
      long unused;
      synchronized (e.getValue()) {
        unused = e.getValue().available;
        e.getValue().available = 0;
        e.getValue().dropped = true;
      }
      releases.add(giveBackToRedis(e.getKey(), unused));
    }
    buckets.clear();
    try {
      CompletableFuture.allOf(releases.toArray(CompletableFuture[]::new)).join();
    } catch (CompletionException e) {
      // counted as lost and logged where it failed
    }
    store.close();
  }
}
