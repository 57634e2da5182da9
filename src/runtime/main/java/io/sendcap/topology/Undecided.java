package io.sendcap.topology;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;

/**
 * The sends this instance has read and not decided yet (gauges {@code sendcap.sends.undecided} and
 * {@code sendcap.sends.undecided.bytes}, their values and headers as read), and the switch that
 * makes its tasks decide them at once before a clean shutdown ({@link #startDraining()}).
 *
 * <p>Undecided sends are never lost: they sit in each task's changelogged buffer and are decided by
 * whichever instance runs the task next. Draining them before a shutdown spares that instance the
 * work and the delay of a restore.
 */
public final class Undecided {
  /** How often a task looks at least whether its batch is due, and so whether to drain. */
  public static final Duration TICK = Duration.ofMillis(100);

  private long count;
  private long bytes;
  private volatile boolean draining;

  /** Counts the undecided sends in {@code metrics}. */
  public Undecided(MeterRegistry metrics) {
    Gauge.builder("sendcap.sends.undecided", this, Undecided::count)
        .description("Sends read and not yet decided, buffered in the tasks of this instance")
        .register(metrics);
    Gauge.builder("sendcap.sends.undecided.bytes", this, Undecided::bytes)
        .description("Bytes of the undecided sends (values and headers, as read)")
        .baseUnit("bytes")
        .register(metrics);
  }

  /** The sends held undecided now. */
  public synchronized long count() {
    return count;
  }

  /** The bytes of the sends held undecided now: their values and headers, as read. */
  public synchronized long bytes() {
    return bytes;
  }

  synchronized void add(int sends, long bytes) {
    count += sends;
    this.bytes += bytes;
  }

  synchronized void remove(int sends, long bytes) {
    count -= sends;
    this.bytes -= bytes;
    if (count <= 0) {
      notifyAll();
    }
  }

  /** Whether tasks are to decide every send as soon as it arrives. */
  boolean draining() {
    return draining;
  }

  /** From now on, tasks decide every send as soon as it arrives, and the batch in hand at once. */
  public void startDraining() {
    draining = true;
  }

  /** Waits until no send is undecided, at most {@code timeout}; returns how many still are. */
  public synchronized long awaitNone(Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (count > 0) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        break;
      }
      wait(Math.max(1, left / 1_000_000));
    }
    return count;
  }
}
