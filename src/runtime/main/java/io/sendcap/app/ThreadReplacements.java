package io.sendcap.app;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;
import org.apache.kafka.streams.errors.StreamsException;

/**
 * The stream threads that failed and were replaced, counted in the meter {@code
 * sendcap.stream.threads.replaced} (tagged with the exception's simple class name) and held against
 * the liveness rule: more than {@code max} replacements within any {@code window} is a crash loop,
 * and the instance is no longer live.
 *
 * <p>A replaced thread resumes its tasks from the last commit, so a failure that comes back on the
 * same input (a bug, a record the producer cannot write) fails every thread that takes the task,
 * with nothing done. Once the rule is broken the instance stays not live for good, even if the
 * replacements stop: it is for its orchestrator to restart it, and for someone to read the logged
 * exception.
 *
 * <p>A replacement counts within the window while it is less than {@code window} old. The failure
 * names the exception's class and message only. Safe for use by several threads.
 */
final class ThreadReplacements {
  /** The longest exception message a failure repeats; the log has the whole exception. */
  static final int MAX_MESSAGE = 300;

  private final int max;
  private final Duration window;
  private final InstantSource clock;
  private final MeterRegistry metrics;

  /** The newest replacements, at most {@code max + 1}, oldest first. */
  private final Deque<Instant> recent = new ArrayDeque<>();

  private String failure;

  /**
   * Creates the count, with no replacement yet.
   *
   * @param max how many replacements within {@code window} are tolerated; one more fails liveness
   * @param window how long a replacement counts against {@code max}
   * @param clock the time of each replacement
   * @param metrics where the replacements are counted
   */
  ThreadReplacements(int max, Duration window, InstantSource clock, MeterRegistry metrics) {
    if (max < 0 || window.isNegative() || window.isZero()) {
      throw new IllegalArgumentException("max " + max + " or window " + window + " out of range");
    }
    this.max = max;
    this.window = window;
    this.clock = clock;
    this.metrics = metrics;
  }

  /**
   * Counts the replacement of a stream thread that failed on {@code e}: Kafka Streams' wrapping
   * {@link StreamsException}s are looked through to the exception that caused them.
   */
  synchronized void record(Throwable e) {
    Throwable cause = cause(e);
    Counter.builder("sendcap.stream.threads.replaced")
        .description("Stream threads that failed and were replaced, by exception")
        .tag("exception", name(cause))
        .register(metrics)
        .increment();
    if (failure != null) {
      return;
    }
    Instant now = clock.instant();
    recent.addLast(now);
    Instant tooOld = now.minus(window);
    while (!recent.getFirst().isAfter(tooOld) || recent.size() > max + 1) {
      recent.removeFirst();
    }
    if (recent.size() > max) {
      failure =
          recent.size()
              + " stream thread replacements within "
              + window.toMillis()
              + " ms (health.live.replacement-window.ms), more than"
              + " health.live.max-thread-replacements="
              + max
              + "; last: "
              + describe(cause);
      recent.clear();
    }
  }

  /** Why the instance is no longer live, if the rule has been broken; empty while it has not. */
  synchronized Optional<String> failure() {
    return Optional.ofNullable(failure);
  }

  private static Throwable cause(Throwable e) {
    Throwable cause = e;
    while (cause instanceof StreamsException && cause.getCause() != null) {
      cause = cause.getCause();
    }
    return cause;
  }

  private static String name(Throwable e) {
    String simple = e.getClass().getSimpleName();
    return simple.isEmpty() ? e.getClass().getName() : simple;
  }

  /** The class and message, on one line and cut short. */
  private static String describe(Throwable e) {
    String message = e.getMessage();
    if (message == null || message.isBlank()) {
      return name(e);
    }
    String line = message.strip().replaceAll("\\s+", " ");
    if (line.length() > MAX_MESSAGE) {
      line = line.substring(0, MAX_MESSAGE) + "...";
    }
    return name(e) + ": " + line;
  }
}
