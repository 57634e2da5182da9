package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.GlobalCap;
import io.sendcap.limit.Deadline;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.QuotaCounters;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The global caps' tokens of one batch through every way a batch can end, on in-memory counters.
 */
class BatchTokensTest {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");
  private static final GlobalCap BUDGET =
      new GlobalCap("budget", GlobalCap.Per.ALL, null, null, "1d", Duration.ofDays(1), 3, 10);
  private static final Decision ALLOWED = new Decision(Decision.Outcome.ALLOWED, -1, 0, 0);
  private static final Decision CAPPED = new Decision(Decision.Outcome.CAPPED, 0, 1, 0);
  private static final Decision REPLAY = new Decision(Decision.Outcome.DUPLICATE, -1, 0, 0);

  private final QuotaCounters counters = new QuotaCounters();
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final GlobalQuotas quotas =
      new GlobalQuotas(counters, "s", InstantSource.fixed(T0), Duration.ofSeconds(5), metrics);

  private static TreeMap<Long, ScheduledSend> sends(int n) {
    TreeMap<Long, ScheduledSend> sends = new TreeMap<>();
    for (long offset = 0; offset < n; offset++) {
      sends.put(
          offset,
          ScheduledSend.newBuilder()
              .setMessageId("m" + offset)
              .setCampaignId("c1")
              .setUserId(offset)
              .setChannel(Channel.EMAIL)
              .setScheduledAt(T0)
              .setTransactional(offset == 5)
              .build());
    }
    return sends;
  }

  private BatchTokens reserve(TreeMap<Long, ScheduledSend> sends) {
    return BatchTokens.reserve(
        quotas, List.of(BUDGET), sends, s -> T0.toEpochMilli(), Deadline.NONE);
  }

  /** Tokens counted in Redis less those the instance holds unused: the sends that used one. */
  private long used() {
    quotas.close(); // gives back what the instance holds
    return counters.total();
  }

  private double lost() {
    return metrics.get("sendcap.global.tokens").tag("event", "lost").functionCounter().count();
  }

  @Test
  void sendsBeyondTheLimitAreRefusedInOffsetOrderAndTransactionalOnesTakeNone() {
    BatchTokens tokens = reserve(sends(6));

    assertThat(tokens.refused()).containsOnlyKeys(3L, 4L);
    assertThat(tokens.refused().get(3L).cap()).isEqualTo(BUDGET);
    assertThat(tokens.refused().get(3L).key().windowStart())
        .isEqualTo(Instant.parse("2026-11-02T00:00:00Z").toEpochMilli());
    tokens.settle(0, ALLOWED);
    tokens.settle(1, ALLOWED);
    tokens.settle(2, ALLOWED);
    assertThat(used()).isEqualTo(3);
  }

  @Test
  void aSendCappedPerUserOrAReplayGivesItsTokenBackToTheSendsRefusedForIt() {
    BatchTokens tokens = reserve(sends(5));
    tokens.settle(0, ALLOWED);
    tokens.settle(1, CAPPED);
    tokens.settle(2, REPLAY);

    assertThat(tokens.secondChances()).containsExactly(3L, 4L);
    BatchTokens again = reserve(new TreeMap<>(sends(5).tailMap(3L)));
    assertThat(again.refused()).isEmpty();
    again.settle(3, ALLOWED);
    again.settle(4, ALLOWED);
    assertThat(used()).isEqualTo(3);
  }

  @Test
  void tokensOfSendsWhosePerUserCallFailedStayCounted() {
    BatchTokens tokens = reserve(sends(3));
    tokens.settle(0, ALLOWED);

    tokens.forfeit(); // Redis may have logged 1 and 2

    assertThat(used()).isEqualTo(3);
    assertThat(lost()).isEqualTo(2);
    assertThat(tokens.secondChances()).isEmpty();
  }

  @Test
  void aReservationRedisCannotAnswerTakesNothing() {
    reserve(sends(1)).settle(0, ALLOWED); // the counter holds 1
    counters.unreachable(true);

    assertThatThrownBy(() -> reserve(sends(3))).isInstanceOf(LimiterUnavailableException.class);

    counters.unreachable(false);
    assertThat(used()).isEqualTo(1);
  }
}
