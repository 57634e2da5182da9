package io.sendcap.app;

import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP endpoint's threads: a fixed pool that interrupts a task still running after its
 * deadline.
 *
 * <p>The JDK's server reads and answers a request on the executor's thread with blocking channel
 * I/O, and has no read timeout of its own (only the JVM-wide {@code sun.net.httpserver.maxReqTime},
 * fixed when the first server of the process starts). An interrupt closes a channel blocked in a
 * read or a write ({@link java.nio.channels.InterruptibleChannel}), so the server drops a client
 * that stalls mid-request or does not read its answer, and the thread serves the next request.
 */
final class DeadlineExecutor implements Executor, AutoCloseable {
  /** Threads serving requests at once. */
  static final int THREADS = 4;

  private static final Logger LOG = LoggerFactory.getLogger(DeadlineExecutor.class);

  private final Duration deadline;
  private final ExecutorService workers;
  private final ScheduledExecutorService watchdog;

  DeadlineExecutor(Duration deadline) {
    this.deadline = deadline;
    AtomicInteger n = new AtomicInteger();
    this.workers =
        Executors.newFixedThreadPool(
            THREADS, r -> daemon(r, "sendcap-http-" + n.incrementAndGet()));
    this.watchdog =
        Executors.newSingleThreadScheduledExecutor(r -> daemon(r, "sendcap-http-deadline"));
  }

  private static Thread daemon(Runnable r, String name) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    return t;
  }

  @Override
  public void execute(Runnable request) {
    workers.execute(() -> runWithDeadline(request));
  }

  private void runWithDeadline(Runnable request) {
    Thread worker = Thread.currentThread();
    Object lock = new Object();
    boolean[] done = {false};
    ScheduledFuture<?> interrupt =
        watchdog.schedule(
            () -> {
              synchronized (lock) {
                if (!done[0]) {
                  LOG.debug(
                      "an HTTP request took over {} ms; closing its connection",
                      deadline.toMillis());
                  worker.interrupt();
                }
              }
            },
            deadline.toMillis(),
            TimeUnit.MILLISECONDS);
    try {
      request.run();
    } finally {
      synchronized (lock) {
        done[0] = true;
      }
      interrupt.cancel(false);
      Thread.interrupted(); // the next request starts with no interrupt of this one's
    }
  }

  @Override
  public void close() {
    workers.shutdownNow();
    watchdog.shutdownNow();
  }
}
