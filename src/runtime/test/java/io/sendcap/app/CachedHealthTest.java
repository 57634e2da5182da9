package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class CachedHealthTest {
  @Test
  void probesWithinTheMaximumAgeShareOneCheckAndALaterProbeChecksAgain() {
    AtomicLong now = new AtomicLong(1_000);
    AtomicInteger checks = new AtomicInteger();
    CachedHealth ready =
        new CachedHealth(
            () -> new HttpEndpoint.Health(true, "check " + checks.incrementAndGet()),
            Duration.ofSeconds(1),
            () -> Instant.ofEpochMilli(now.get()));

    assertThat(ready.get().detail()).isEqualTo("check 1");
    now.addAndGet(999);
    assertThat(ready.get().detail()).isEqualTo("check 1");
    now.addAndGet(1);
    assertThat(ready.get().detail()).isEqualTo("check 2");
    assertThat(checks).hasValue(2);
  }
}
