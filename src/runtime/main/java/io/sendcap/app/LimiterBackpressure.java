package io.sendcap.app;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.limit.LimiterRefusedException;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.RedisConnector;
import io.sendcap.topology.Backpressure;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.streams.KafkaStreams;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's {@link Backpressure} under {@code cap.redis.failure-mode=block}: while Redis
 * cannot be reached, Kafka Streams is paused (no input is read and nothing is decided; the waiting
 * sends stay pending in their tasks, and the mark of each task's undecided sends commits with the
 * offsets), Redis is probed with backoff, and processing resumes once every node answers a PING.
 *
 * <p>An outage lasts from the first batch the limiter could not decide to the next one it did. Its
 * start and end are logged, a reminder every {@link #REMINDER_INTERVAL} in between, and the gauge
 * {@code sendcap.limiter.unavailable} is 1 during it; {@code sendcap.limiter.outages} counts them.
 * A batch that fails less than {@link #SETTLE} after an outage's end continues that outage: when
 * Redis comes back, each task's connection reconnects on its own (within a second, at {@link
 * RedisConnector}'s reconnect delay), so a batch on a connection not yet back can fail after
 * another task's batch was decided, and one restart of Redis is one outage.
 */
final class LimiterBackpressure implements Backpressure, AutoCloseable {
  /** How often a continuing outage is logged again. */
  static final Duration REMINDER_INTERVAL = Duration.ofSeconds(30);

  /** How long after an outage's end a failed batch still belongs to it. */
  static final Duration SETTLE = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(LimiterBackpressure.class);
  private static final long FIRST_PROBE_MS = 100;
  private static final long MAX_PROBE_MS = 1_000;

  private final RedisConnector redis;
  private final InstantSource clock;
  private final Counter outages;
  private final ScheduledExecutorService prober =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "sendcap-redis-probe");
            t.setDaemon(true);
            return t;
          });
  private KafkaStreams streams;
  private volatile boolean holding;
  private volatile long outageSince = -1;

  /** Why Redis refuses sendcap's calls, since the last batch it refused; null while it does not. */
  private volatile String refusal;

  private long lastLogged;
  private long endedAt = -1;
  private long endedSince;
  private boolean continued;

  LimiterBackpressure(RedisConnector redis, InstantSource clock, MeterRegistry metrics) {
    this.redis = redis;
    this.clock = clock;
    this.outages =
        Counter.builder("sendcap.limiter.outages")
            .description("Times Redis became unreachable while sends waited (block mode)")
            .register(metrics);
    Gauge.builder("sendcap.limiter.unavailable", this, b -> b.outageSince >= 0 ? 1 : 0)
        .description("1 while sends wait for an unreachable Redis (block mode), else 0")
        .register(metrics);
    Gauge.builder("sendcap.limiter.refused", this, b -> b.refusal != null ? 1 : 0)
        .description(
            "1 while Redis refuses sendcap's calls (an ACL, credentials, memory, the script: see"
                + " /health/ready), else 0")
        .register(metrics);
  }

  /**
   * Why Redis refuses sendcap's calls (NOPERM, NOAUTH, OOM, a script error: a configuration or
   * capacity error for an operator to fix), if the last batch that failed did for that reason and
   * none was decided since.
   */
  Optional<String> refusal() {
    return Optional.ofNullable(refusal);
  }

  /** Sets the Kafka Streams instance to pause and resume; before it starts. */
  synchronized void attach(KafkaStreams streams) {
    this.streams = streams;
  }

  @Override
  public boolean holding() {
    return holding;
  }

  @Override
  public synchronized void unavailable(LimiterUnavailableException cause, int waiting) {
    long now = clock.millis();
    if (refusalStarts(cause)) {
      LOG.error(
          "Redis at {} refuses sendcap's calls: {}. Processing paused, {} sends wait in their tasks"
              + " and nothing is lost; /health/ready reports the refusal until Redis decides a"
              + " batch again",
          redis.where(),
          refusal,
          waiting);
    }
    boolean starts = false;
    if (outageSince < 0 && endedAt >= 0 && now - endedAt < SETTLE.toMillis()) {
      // a connection not yet back after the outage that just ended: the same outage
      outageSince = endedSince;
      continued = true;
    } else if (outageSince < 0) {
      outageSince = now;
      lastLogged = now;
      continued = false;
      outages.increment();
      starts = true;
    }
    if (starts && refusal == null) {
      LOG.warn(
          "Redis at {} is unreachable ({}); processing paused, {} sends wait in their tasks and"
              + " nothing is lost; probing Redis until it answers",
          redis.where(),
          cause.getMessage(),
          waiting);
    }
    if (!holding) {
      holding = true;
      streams.pause();
      prober.schedule(() -> probe(FIRST_PROBE_MS), FIRST_PROBE_MS, TimeUnit.MILLISECONDS);
    }
  }

  @Override
  public void answered() {
    if (refusal != null) {
      refusal = null;
      LOG.info("Redis at {} accepts sendcap's calls again", redis.where());
    }
    if (outageSince >= 0) {
      ended();
    }
  }

  @Override
  public void decidedWithout(LimiterUnavailableException cause) {
    if (refusalStarts(cause)) {
      LOG.error(
          "Redis at {} refuses sendcap's calls: {}. Sends are decided by cap.redis.failure-mode"
              + " meanwhile; /health/ready reports the refusal until Redis decides a batch again",
          redis.where(),
          refusal);
    }
  }

  /**
   * Notes why the limiter failed: whether Redis refused, and why. Returns whether a refusal starts
   * with {@code cause}.
   */
  private boolean refusalStarts(LimiterUnavailableException cause) {
    boolean before = refusal != null;
    refusal = cause instanceof LimiterRefusedException ? cause.getMessage() : null;
    return refusal != null && !before;
  }

  private synchronized void ended() {
    if (outageSince >= 0) {
      if (continued) {
        LOG.debug("Redis at {} answers a connection that came back late", redis.where());
      } else {
        LOG.info(
            "Redis at {} decides sends again after {} s unreachable; processing resumed",
            redis.where(),
            (clock.millis() - outageSince) / 1000);
      }
      endedAt = clock.millis();
      endedSince = outageSince;
      outageSince = -1;
    }
  }

  private void probe(long delayMs) {
    try {
      redis.ping();
      resume();
    } catch (LimiterUnavailableException e) {
      remind(e);
      long next = Math.min(delayMs * 2, MAX_PROBE_MS);
      prober.schedule(() -> probe(next), next, TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      LOG.error("probing Redis failed unexpectedly; resuming processing to try the limiter", e);
      resume();
    }
  }

  private synchronized void resume() {
    holding = false;
    streams.resume();
    LOG.debug("Redis at {} answers a PING; processing resumed", redis.where());
  }

  private synchronized void remind(LimiterUnavailableException e) {
    long now = clock.millis();
    if (outageSince >= 0 && now - lastLogged >= REMINDER_INTERVAL.toMillis()) {
      lastLogged = now;
      LOG.warn(
          "Redis at {} still unreachable after {} s ({}); processing stays paused",
          redis.where(),
          (now - outageSince) / 1000,
          e.getMessage());
    }
  }

  @Override
  public void close() {
    prober.shutdownNow();
  }
}
