package io.sendcap.app;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.serde.SchemaRegistryConfigurationException;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import io.sendcap.topology.RegistryOutage;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The application's {@link RegistryOutage}: while the schema registry cannot be reached for a send,
 * the stream thread reading it waits here between tries, 100 ms after the first failure, doubling
 * up to 1 s, so that the send is neither dead-lettered nor lost and reading resumes on its own once
 * the registry answers (why the thread waits rather than fails: {@code
 * RegistryRetryingDeserializer}).
 *
 * <p>An outage lasts from the first try that failed to the first one the registry answered. Its
 * start and end are logged, a reminder every {@link #REMINDER_INTERVAL} in between, and the gauge
 * {@code sendcap.registry.unavailable} is 1 during it; {@code sendcap.registry.outages} counts
 * them. A registry that refuses sendcap's credentials ({@link
 * SchemaRegistryConfigurationException}) is waited for the same way, so that no send is lost to a
 * wrong setting; its log line and {@link #health()} name the setting to fix. {@link #close()} ends
 * every wait with its failure, so that a stopping application does not wait for the registry.
 */
final class RegistryBackpressure implements RegistryOutage, AutoCloseable {
  /** How often a continuing outage is logged again. */
  static final Duration REMINDER_INTERVAL = LimiterBackpressure.REMINDER_INTERVAL;

  private static final Logger LOG = LoggerFactory.getLogger(RegistryBackpressure.class);
  private static final long FIRST_RETRY_MS = 100;
  private static final long MAX_RETRY_MS = 1_000;

  private final InstantSource clock;
  private final Counter outages;
  private volatile long outageSince = -1;
  private volatile SchemaRegistryUnavailableException lastCause;
  private long lastLogged;
  private boolean closed;

  RegistryBackpressure(InstantSource clock, MeterRegistry metrics) {
    this.clock = clock;
    this.outages =
        Counter.builder("sendcap.registry.outages")
            .description("Times the schema registry became unreachable while a send needed it")
            .register(metrics);
    Gauge.builder("sendcap.registry.unavailable", this, r -> r.waiting() ? 1 : 0)
        .description("1 while a send waits for an unreachable schema registry, else 0")
        .register(metrics);
  }

  /** Whether an outage is going on: a send waits for the registry. */
  boolean waiting() {
    return outageSince >= 0;
  }

  /**
   * What health says while a send waits for the registry: that the registry refuses sendcap and
   * which setting to fix, or how long it has been unreachable; empty when no send waits.
   */
  Optional<String> health() {
    SchemaRegistryUnavailableException cause = lastCause;
    if (!waiting() || cause == null) {
      return Optional.empty();
    }
    if (cause instanceof SchemaRegistryConfigurationException) {
      return Optional.of("a send waits: " + cause.getMessage());
    }
    return Optional.of(
        "a send waits for the schema registry, unreachable for " + outageSeconds() + " s");
  }

  /** How long the current outage has lasted, in whole seconds; 0 if there is none. */
  long outageSeconds() {
    long since = outageSince;
    return since < 0 ? 0 : (clock.millis() - since) / 1000;
  }

  @Override
  public synchronized void await(SchemaRegistryUnavailableException cause, int failures) {
    if (closed) {
      throw cause;
    }
    long now = clock.millis();
    lastCause = cause;
    if (outageSince < 0) {
      outageSince = now;
      lastLogged = now;
      outages.increment();
      LOG.warn(
          "{}; reading stops at the send that needs the registry (nothing is lost or"
              + " dead-lettered) and resumes once the registry answers",
          cause.getMessage());
    } else if (now - lastLogged >= REMINDER_INTERVAL.toMillis()) {
      lastLogged = now;
      LOG.warn(
          "the schema registry is still unreachable after {} s ({}); reading stays stopped",
          (now - outageSince) / 1000,
          cause.getMessage());
    }
    long delay = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS << Math.min(failures - 1, 10));
    long deadline = System.nanoTime() + delay * 1_000_000;
    try {
      for (long left = delay; left > 0 && !closed; ) {
        wait(left);
        left = (deadline - System.nanoTime()) / 1_000_000;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw cause;
    }
    if (closed) {
      throw cause;
    }
  }

  @Override
  public synchronized void answered() {
    if (outageSince >= 0) {
      LOG.info(
          "the schema registry answers again after {} s unreachable; reading resumed",
          (clock.millis() - outageSince) / 1000);
      outageSince = -1;
    }
  }

  /** Whether {@link #close()} has ended the waits: the application stops. */
  synchronized boolean closed() {
    return closed;
  }

  /** Ends every wait, and every one to come, with its failure: the application stops. */
  @Override
  public synchronized void close() {
    closed = true;
    notifyAll();
  }
}
