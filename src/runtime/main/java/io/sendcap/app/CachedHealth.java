package io.sendcap.app;

import java.time.Duration;
import java.time.InstantSource;
import java.util.function.Supplier;

/**
 * A health check whose answer is reused for a while: a probe within {@code maxAge} of the last
 * check gets that check's answer, and probes that arrive while a check runs wait for it rather than
 * run one each. A flood of probes, or probes piling up while Redis is slow to answer, costs one
 * check at a time, and holds the endpoint's threads for one check at most.
 */
final class CachedHealth implements Supplier<HttpEndpoint.Health> {
  /** How long a readiness answer is reused. */
  static final Duration READY_MAX_AGE = Duration.ofSeconds(1);

  private final Supplier<HttpEndpoint.Health> check;
  private final long maxAgeMs;
  private final InstantSource clock;
  private HttpEndpoint.Health last;
  private long checkedAt;

  CachedHealth(Supplier<HttpEndpoint.Health> check, Duration maxAge, InstantSource clock) {
    this.check = check;
    this.maxAgeMs = maxAge.toMillis();
    this.clock = clock;
  }

  @Override
  public synchronized HttpEndpoint.Health get() {
    if (last == null || clock.millis() - checkedAt >= maxAgeMs) {
      last = check.get();
      checkedAt = clock.millis();
    }
    return last;
  }
}
