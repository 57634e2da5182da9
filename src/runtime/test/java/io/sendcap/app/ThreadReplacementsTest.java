package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.streams.errors.StreamsException;
import org.junit.jupiter.api.Test;

class ThreadReplacementsTest {
  private static final Duration WINDOW = Duration.ofMinutes(10);

  private final AtomicLong now = new AtomicLong(1_000_000);
  private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final ThreadReplacements replacements = new ThreadReplacements(3, WINDOW, clock, metrics);

  private void after(Duration d) {
    now.addAndGet(d.toMillis());
  }

  @Test
  void upToTheMaxWithinTheWindowStaysLive() {
    for (int i = 0; i < 3; i++) {
      replacements.record(new IllegalStateException("bug " + i));
      after(Duration.ofMinutes(1));
    }

    assertThat(replacements.failure()).isEmpty();
    assertThat(replaced("IllegalStateException")).isEqualTo(3);
  }

  @Test
  void oneOverTheMaxWithinTheWindowFailsNamingCountWindowAndLastException() {
    for (int i = 0; i < 3; i++) {
      replacements.record(new IllegalStateException("bug " + i));
      after(Duration.ofMinutes(3));
    }
    replacements.record(
        new StreamsException(
            "Error encountered sending record to topic deliveries",
            new RecordTooLargeException("The message is 3000 bytes\nwhen serialized")));

    assertThat(replacements.failure())
        .hasValue(
            "4 stream thread replacements within 600000 ms (health.live.replacement-window.ms),"
                + " more than health.live.max-thread-replacements=3; last:"
                + " RecordTooLargeException: The message is 3000 bytes when serialized");
    assertThat(replaced("IllegalStateException")).isEqualTo(3);
    assertThat(replaced("RecordTooLargeException")).isEqualTo(1);
  }

  @Test
  void replacementsSpreadBeyondTheWindowDoNotAccumulate() {
    for (int i = 0; i < 100; i++) {
      replacements.record(new IllegalStateException("bug"));
      after(WINDOW.dividedBy(3));
    }

    assertThat(replacements.failure()).isEmpty();
    assertThat(replaced("IllegalStateException")).isEqualTo(100);
  }

  @Test
  void aReplacementOneWholeWindowOldNoLongerCounts() {
    for (int i = 0; i < 3; i++) {
      replacements.record(new IllegalStateException("bug"));
    }
    after(WINDOW);
    replacements.record(new IllegalStateException("bug"));
    assertThat(replacements.failure()).as("the first three are a whole window old").isEmpty();

    after(WINDOW.minusMillis(1));
    replacements.record(new IllegalStateException("bug"));
    replacements.record(new IllegalStateException("bug"));
    replacements.record(new IllegalStateException("bug"));
    assertThat(replacements.failure()).as("four within one window less 1 ms").isPresent();
  }

  @Test
  void onceFailedItStaysFailed() {
    ThreadReplacements strict = new ThreadReplacements(0, WINDOW, clock, metrics);
    strict.record(new IllegalStateException("first"));
    String failure = strict.failure().orElseThrow();

    after(WINDOW.multipliedBy(100));
    strict.record(new IllegalArgumentException("later"));

    assertThat(strict.failure()).hasValue(failure);
    assertThat(failure)
        .contains("1 stream thread replacements")
        .endsWith("IllegalStateException: first");
    assertThat(replaced("IllegalArgumentException")).isEqualTo(1);
  }

  @Test
  void aLongMessageIsCutShort() {
    ThreadReplacements strict = new ThreadReplacements(0, WINDOW, clock, metrics);
    strict.record(new IllegalStateException("x".repeat(1_000)));

    assertThat(strict.failure().orElseThrow())
        .endsWith("IllegalStateException: " + "x".repeat(ThreadReplacements.MAX_MESSAGE) + "...");
  }

  private double replaced(String exception) {
    return metrics
        .get("sendcap.stream.threads.replaced")
        .tag("exception", exception)
        .counter()
        .count();
  }
}
