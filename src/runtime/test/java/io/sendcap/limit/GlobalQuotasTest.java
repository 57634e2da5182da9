package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class GlobalQuotasTest {
  private static final GlobalQuotas.Key KEY =
      GlobalQuotas.Key.of("budget", "all", 1_000, Duration.ofHours(1).toMillis());

  private final AtomicLong now = new AtomicLong(0);
  private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

  private GlobalQuotas quotas(QuotaCounters counters) {
    return new GlobalQuotas(counters, "s", clock, Duration.ofSeconds(5), new SimpleMeterRegistry());
  }

  @Test
  void theBatchGrowsWhileUsedUpWithinItsBoundSoFewSendsAskRedis() {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas quotas = quotas(counters);

    long got = 0;
    for (int i = 0; i < 1_000; i++) {
      got += quotas.acquire(KEY, 1_000_000, 64, 1);
    }

    assertThat(got).isEqualTo(1_000);
    // 1, 2, 4, ..., 64, then 64 at a time: 7 reservations for 127 sends, 14 more for the rest.
    assertThat(counters.reserves()).isEqualTo(7 + (1_000 - 127 + 63) / 64);
    assertThat(counters.total()).isLessThanOrEqualTo(1_000 + 64);
  }

  @Test
  void tokensLeftAtTheEndOfTheirLeaseGoBackAndTheBatchShrinks() {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas quotas = quotas(counters);
    for (int i = 0; i < 100; i++) {
      quotas.acquire(KEY, 1_000_000, 64, 1);
    }
    long held = counters.total() - 100;
    assertThat(held).isPositive();

    now.addAndGet(Duration.ofSeconds(5).toMillis()); // the lease ends; the counter is still in use
    quotas.sweep();

    assertThat(counters.total()).as("only the tokens used stay counted").isEqualTo(100);
    assertThat(counters.releases()).isEqualTo(1);
    int before = counters.reserves();
    quotas.acquire(KEY, 1_000_000, 64, 1);
    assertThat(counters.total()).as("the next batch is half the last").isEqualTo(100 + 32);
    assertThat(counters.reserves()).isEqualTo(before + 1);
  }

  @Test
  void tokensGivenBackServeTheNextSendsWithoutRedis() {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas quotas = quotas(counters);
    assertThat(quotas.acquire(KEY, 10, 10, 4)).isEqualTo(4);
    quotas.giveBack(KEY, 4);
    int before = counters.reserves();

    assertThat(quotas.acquire(KEY, 10, 10, 4)).isEqualTo(4);
    assertThat(counters.reserves()).isEqualTo(before);
  }

  @Test
  void aRequestIsRefusedOnlyWhenNoTokenIsLeftAndNeverBeyondTheLimit() throws Exception {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas one = quotas(counters);
    GlobalQuotas two = quotas(counters);
    long limit = 50_000;
    ExecutorService threads = Executors.newFixedThreadPool(16);
    List<Future<Long>> taken = new ArrayList<>();
    for (int t = 0; t < 16; t++) {
      GlobalQuotas instance = t % 2 == 0 ? one : two;
      int want = 1 + t % 3;
      taken.add(
          threads.submit(
              () -> {
                long sum = 0;
                while (true) {
                  long got = instance.acquire(KEY, limit, 50, want);
                  sum += got;
                  if (got < want) {
                    return sum;
                  }
                }
              }));
    }
    long total = 0;
    for (Future<Long> f : taken) {
      total += f.get();
    }
    threads.shutdown();

    assertThat(total).isEqualTo(limit);
    assertThat(counters.total()).isEqualTo(limit);
    assertThat(counters.reserves()).isLessThan((int) (limit / 10));
  }

  @Test
  void aReservationThatFailsGivesBackTheTokensTheRequestHadTakenLocally() {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas quotas = quotas(counters);
    assertThat(quotas.acquire(KEY, 10, 10, 2)).isEqualTo(2);
    quotas.giveBack(KEY, 2); // the instance holds 2

    counters.unreachable(true);
    assertThatThrownBy(() -> quotas.acquire(KEY, 10, 10, 5))
        .isInstanceOf(LimiterUnavailableException.class);
    counters.unreachable(false);

    int before = counters.reserves();
    assertThat(quotas.acquire(KEY, 10, 10, 2)).as("the 2 held are still there").isEqualTo(2);
    assertThat(counters.reserves()).isEqualTo(before);
    assertThat(counters.total()).isEqualTo(2);
  }

  @Test
  void tokensGivenBackAfterTheirCounterWasForgottenGoBackToRedis() {
    QuotaCounters counters = new QuotaCounters();
    GlobalQuotas quotas = quotas(counters);
    assertThat(quotas.acquire(KEY, 10, 10, 1)).isEqualTo(1); // held by a send of a stalled batch
    now.addAndGet(Duration.ofSeconds(6).toMillis());
    quotas.sweep(); // forgets the counter: nothing held locally, unused for a lease

    quotas.giveBack(KEY, 1); // the stalled send was capped per user

    assertThat(counters.total()).isZero();
  }

  @Test
  @Timeout(30) // a sweep that waited for Redis would hang here
  void sweepingDoesNotWaitForRedis() {
    QuotaCounters counters = new QuotaCounters();
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    GlobalQuotas quotas = new GlobalQuotas(counters, "s", clock, Duration.ofSeconds(5), metrics);
    for (int i = 0; i < 10; i++) {
      quotas.acquire(KEY, 1_000, 64, 1);
    }
    CompletableFuture<Void> redisAnswers = new CompletableFuture<>();
    counters.answerReleasesWith(redisAnswers);
    now.addAndGet(Duration.ofSeconds(5).toMillis());

    quotas.sweep();
    assertThat(counters.total()).as("not given back yet").isGreaterThan(10);

    redisAnswers.complete(null);
    assertThat(counters.total()).isEqualTo(10);
    assertThat(metrics.get("sendcap.global.tokens").tag("event", "released").functionCounter())
        .extracting(c -> c.count())
        .isEqualTo(5.0); // 1 + 2 + 4 + 8 reserved for 10 sends
  }

  @Test
  void tokensRedisCannotTakeBackAreCountedLost() {
    QuotaCounters counters = new QuotaCounters();
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    GlobalQuotas quotas = new GlobalQuotas(counters, "s", clock, Duration.ofSeconds(5), metrics);
    assertThat(quotas.acquire(KEY, 10, 10, 3)).isEqualTo(3);
    quotas.giveBack(KEY, 3);
    counters.unreachable(true);
    now.addAndGet(Duration.ofSeconds(5).toMillis());

    quotas.sweep();

    assertThat(counters.total()).as("fewer sends allowed, never more").isEqualTo(3);
    assertThat(metrics.get("sendcap.global.tokens").tag("event", "lost").functionCounter())
        .extracting(c -> c.count())
        .isEqualTo(3.0);
  }
}
