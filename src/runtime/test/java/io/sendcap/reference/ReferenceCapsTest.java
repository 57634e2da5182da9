package io.sendcap.reference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.avro.Channel;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.reference.ReferenceCaps.Outcome;
import io.sendcap.reference.ReferenceCaps.Verdict;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The reference model decides hand-worked cases of DESIGN.md's rules as DESIGN.md says. */
class ReferenceCapsTest {
  private static final Instant T = Instant.parse("2026-10-24T10:00:00Z");
  private final ReferenceCaps rules = new ReferenceCaps();
  private int ids;

  private static Policy policy(String yaml) {
    return Policies.parse("segments: []\ndefault:\n" + yaml, "test").defaultPolicy();
  }

  private Verdict send(Policy policy, Duration after) {
    return send(policy, Channel.EMAIL, T.plus(after), null);
  }

  private Verdict send(Policy policy, Channel channel, Instant at, ZoneId zone) {
    return rules.decide(
        new ReferenceCaps.Send(1, "m" + ids++, channel, at.toEpochMilli(), false, zone), policy);
  }

  private static long at(Duration after) {
    return T.plus(after).toEpochMilli();
  }

  @Test
  void aSendExactlyOneWindowOldHasLeftTheWindow() {
    Policy p = policy("  caps:\n    - {window: 1d, limit: 2}\n");
    assertThat(send(p, Duration.ZERO).outcome()).isEqualTo(Outcome.ALLOWED);
    assertThat(send(p, Duration.ofHours(1)).outcome()).isEqualTo(Outcome.ALLOWED);
    Verdict capped = send(p, Duration.ofHours(2));
    assertThat(capped.outcome()).isEqualTo(Outcome.CAP);
    assertThat(capped.count()).isEqualTo(2);
    assertThat(capped.nextEligibleAt()).isEqualTo(at(Duration.ofDays(1)));
    assertThat(send(p, Duration.ofDays(1).minusMillis(1)).outcome()).isEqualTo(Outcome.CAP);
    assertThat(send(p, Duration.ofDays(1)).outcome()).isEqualTo(Outcome.ALLOWED);
  }

  @Test
  void aSendAllowedLaterThanNowCountsAndLeavesTheWindowLast() {
    Policy p = policy("  caps:\n    - {window: 1d, limit: 2}\n    - {window: 7d, limit: 4}\n");
    send(p, Duration.ZERO);
    send(p, Duration.ofHours(1));
    assertThat(send(p, Duration.ofDays(9)).outcome()).isEqualTo(Outcome.ALLOWED);
    Verdict fourth = send(p, Duration.ofHours(2));
    assertThat(fourth.outcome()).isEqualTo(Outcome.CAP);
    assertThat(fourth.capIndex()).isZero();
    assertThat(fourth.count()).isEqualTo(3);
    // T + 9d stays in every 1d window ending before it: two sends fit again once T + 1h has left
    assertThat(fourth.nextEligibleAt()).isEqualTo(at(Duration.ofHours(25)));
  }

  @Test
  void aCalendarDayIsTheUsersDayAndItsEndIsWhenTheSendIsEligible() {
    Policy p = policy("  caps:\n    - {window: calendar-day, limit: 1}\n");
    ZoneId kolkata = ZoneId.of("Asia/Kolkata");
    Instant lateEvening = Instant.parse("2026-10-24T18:00:00Z"); // 23:30 in Kolkata
    assertThat(send(p, Channel.EMAIL, lateEvening, kolkata).outcome()).isEqualTo(Outcome.ALLOWED);
    Verdict capped = send(p, Channel.EMAIL, lateEvening.plusSeconds(29 * 60), kolkata);
    assertThat(capped.outcome()).isEqualTo(Outcome.CAP);
    assertThat(capped.nextEligibleAt())
        .isEqualTo(Instant.parse("2026-10-24T18:30:00Z").toEpochMilli());
    assertThat(send(p, Channel.EMAIL, lateEvening.plusSeconds(30 * 60), kolkata).outcome())
        .isEqualTo(Outcome.ALLOWED);
    // the same two sends in the policy's zone (UTC) fall on one day
    assertThat(send(p, Channel.EMAIL, lateEvening.plusSeconds(40 * 60), null).outcome())
        .isEqualTo(Outcome.CAP);
  }

  @Test
  void aCalendarWeekRunsFromMondayInTheZoneAcrossADaylightSavingChange() {
    Policy p = policy("  zone: Europe/Berlin\n  caps:\n    - {window: calendar-week, limit: 1}\n");
    // Sunday 25 October 2026, the day Berlin leaves summer time; its week began Monday the 19th
    Instant sunday = Instant.parse("2026-10-25T12:00:00Z");
    assertThat(send(p, Channel.EMAIL, sunday, null).outcome()).isEqualTo(Outcome.ALLOWED);
    Verdict capped = send(p, Channel.EMAIL, Instant.parse("2026-10-25T22:59:59Z"), null);
    assertThat(capped.outcome()).isEqualTo(Outcome.CAP);
    assertThat(capped.nextEligibleAt())
        .isEqualTo(Instant.parse("2026-10-25T23:00:00Z").toEpochMilli()); // Monday 00:00 CET
    assertThat(send(p, Channel.EMAIL, Instant.parse("2026-10-25T23:00:00Z"), null).outcome())
        .isEqualTo(Outcome.ALLOWED);
  }

  @Test
  void aChannelCapCountsAndAppliesToItsChannelOnly() {
    Policy p =
        policy(
            "  caps:\n    - {window: 1d, limit: 1, channel: SMS}\n    - {window: 1d, limit: 3}\n");
    assertThat(send(p, Channel.SMS, T, null).outcome()).isEqualTo(Outcome.ALLOWED);
    assertThat(send(p, Channel.EMAIL, T.plusSeconds(60), null).outcome())
        .isEqualTo(Outcome.ALLOWED);
    Verdict sms = send(p, Channel.SMS, T.plusSeconds(120), null);
    assertThat(List.of(sms.outcome(), sms.capIndex(), sms.count()))
        .containsExactly(Outcome.CAP, 0, 1);
    assertThat(send(p, Channel.PUSH, T.plusSeconds(180), null).outcome())
        .isEqualTo(Outcome.ALLOWED);
    Verdict email = send(p, Channel.EMAIL, T.plusSeconds(240), null);
    assertThat(List.of(email.outcome(), email.capIndex(), email.count()))
        .containsExactly(Outcome.CAP, 1, 3);
  }

  @Test
  void theMinimumIntervalIsFromTheNewestSendEvenOneLaterThanNow() {
    Policy p = policy("  min-interval: 2h\n  caps:\n    - {window: 1d, limit: 5}\n");
    send(p, Duration.ZERO);
    Verdict tooSoon = send(p, Duration.ofHours(1));
    assertThat(tooSoon.outcome()).isEqualTo(Outcome.MIN_INTERVAL);
    assertThat(tooSoon.nextEligibleAt()).isEqualTo(at(Duration.ofHours(2)));
    assertThat(send(p, Duration.ofHours(2)).outcome()).isEqualTo(Outcome.ALLOWED);
    Verdict earlier = send(p, Duration.ofMinutes(-30));
    assertThat(earlier.outcome()).isEqualTo(Outcome.MIN_INTERVAL);
    assertThat(earlier.nextEligibleAt()).isEqualTo(at(Duration.ofHours(4)));
  }

  @Test
  void nextEligibleAtIsTheLatestOverTheFailingConstraints() {
    Policy p =
        policy(
            "  min-interval: 3h\n  caps:\n    - {window: 1h, limit: 1}\n"
                + "    - {window: calendar-day, limit: 1}\n");
    send(p, Duration.ZERO);
    Verdict v = send(p, Duration.ofMinutes(30));
    assertThat(v.outcome()).isEqualTo(Outcome.CAP);
    assertThat(v.capIndex()).isZero();
    assertThat(v.nextEligibleAt()).isEqualTo(Instant.parse("2026-10-25T00:00:00Z").toEpochMilli());
  }

  @Test
  void replaysAndTransactionalSendsAreAllowedAndConsumeNothing() {
    Policy p = policy("  caps:\n    - {window: 1d, limit: 1}\n");
    ReferenceCaps.Send first =
        new ReferenceCaps.Send(1, "a", Channel.EMAIL, at(Duration.ZERO), false, null);
    assertThat(rules.decide(first, p).outcome()).isEqualTo(Outcome.ALLOWED);
    assertThat(rules.decide(first, p).outcome()).isEqualTo(Outcome.REPLAY);
    ReferenceCaps.Send receipt =
        new ReferenceCaps.Send(1, "r", Channel.EMAIL, at(Duration.ofHours(1)), true, null);
    assertThat(rules.decide(receipt, p).outcome()).isEqualTo(Outcome.TRANSACTIONAL);
    Verdict capped = send(p, Duration.ofHours(2));
    assertThat(capped.count()).isEqualTo(1);
    assertThat(
            rules
                .decide(
                    new ReferenceCaps.Send(2, "a", Channel.EMAIL, at(Duration.ZERO), false, null),
                    p)
                .outcome())
        .as("a replay is of the same user's send")
        .isEqualTo(Outcome.ALLOWED);
  }

  @Test
  void capsOfOtherAlgorithmsAreOutsideTheModel() {
    Policy p = policy("  caps:\n    - {window: 1d, limit: 1, algorithm: token-bucket}\n");
    assertThatThrownBy(() -> send(p, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("token-bucket");
  }
}
