package io.sendcap.report;

import static io.sendcap.avro.Channel.EMAIL;
import static io.sendcap.avro.Channel.SMS;
import static io.sendcap.avro.SuppressionReason.CAP;
import static io.sendcap.avro.SuppressionReason.LIMITER_UNAVAILABLE;
import static io.sendcap.avro.SuppressionReason.MIN_INTERVAL;
import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.report.SuppressionReport.Mode;
import io.sendcap.report.SuppressionReport.Row;
import io.sendcap.testing.Suppressions;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SuppressionReportTest {
  private static final Instant T = Instant.parse("2026-11-20T10:00:00Z");

  private final SuppressionReport report = new SuppressionReport();

  private void add(int times, String campaign, String segment, boolean shadow, String reason) {
    for (int i = 0; i < times; i++) {
      Instant at = T.plus(Duration.ofMinutes(i));
      switch (reason) {
        case "CAP 1d" ->
            report.add(Suppressions.of(campaign, segment, EMAIL, CAP, "1d", shadow, at));
        case "CAP 7d" ->
            report.add(Suppressions.of(campaign, segment, EMAIL, CAP, "7d", shadow, at));
        case "MIN_INTERVAL" ->
            report.add(Suppressions.of(campaign, segment, EMAIL, MIN_INTERVAL, null, shadow, at));
        default ->
            report.add(
                Suppressions.of(campaign, segment, SMS, LIMITER_UNAVAILABLE, null, shadow, at));
      }
    }
  }

  @Test
  void rowsAreCountedByCampaignSegmentChannelAndReasonWithTheCapWindow() {
    add(3, "bf", "active", false, "CAP 1d");
    add(5, "bf", "active", false, "CAP 7d");
    add(2, "bf", "dormant", false, "MIN_INTERVAL");
    add(4, "nl", "active", false, "LIMITER_UNAVAILABLE");

    assertThat(report.rows())
        .containsExactly(
            new Row(Mode.ENFORCED, "bf", "active", "EMAIL", "CAP", "7d", null, 5),
            new Row(Mode.ENFORCED, "nl", "active", "SMS", "LIMITER_UNAVAILABLE", null, null, 4),
            new Row(Mode.ENFORCED, "bf", "active", "EMAIL", "CAP", "1d", null, 3),
            new Row(Mode.ENFORCED, "bf", "dormant", "EMAIL", "MIN_INTERVAL", null, null, 2));
    assertThat(report.rows().get(0).reasonLabel()).isEqualTo("CAP 7d");
    assertThat(report.rows().get(1).reasonLabel()).isEqualTo("LIMITER_UNAVAILABLE");
    assertThat(report.total(Mode.ENFORCED)).isEqualTo(14);
  }

  @Test
  void shadowSuppressionsAreCountedApartAndListedAfterTheEnforcedOnes() {
    add(2, "bf", "active", false, "CAP 1d");
    add(9, "bf", "active", true, "CAP 1d");
    add(1, "bf", "active", true, "MIN_INTERVAL");

    assertThat(report.rows())
        .containsExactly(
            new Row(Mode.ENFORCED, "bf", "active", "EMAIL", "CAP", "1d", null, 2),
            new Row(Mode.SHADOW, "bf", "active", "EMAIL", "CAP", "1d", null, 9),
            new Row(Mode.SHADOW, "bf", "active", "EMAIL", "MIN_INTERVAL", null, null, 1));
    assertThat(report.total(Mode.ENFORCED)).isEqualTo(2);
    assertThat(report.total(Mode.SHADOW)).isEqualTo(10);
    assertThat(report.byReason(Mode.ENFORCED).totals()).isEqualTo(Map.of("CAP 1d", 2L));
    assertThat(report.byReason(Mode.SHADOW).totals())
        .isEqualTo(Map.of("CAP 1d", 9L, "MIN_INTERVAL", 1L));
  }

  @Test
  void aGlobalCapIsNamedWithoutTheCampaignOrChannelItCountsWhichTheRowNames() {
    report.add(Suppressions.global("bf", "active", EMAIL, "campaign-budget:bf", T));
    report.add(Suppressions.global("bf", "active", EMAIL, "campaign-budget:bf", T));
    report.add(Suppressions.global("nl", "active", EMAIL, "campaign-budget:nl", T));
    report.add(Suppressions.global("nl", "active", EMAIL, "email-provider:EMAIL", T));
    report.add(Suppressions.global("nl", "active", EMAIL, "black-friday", T));

    assertThat(report.rows())
        .containsExactly(
            new Row(
                Mode.ENFORCED, "bf", "active", "EMAIL", "GLOBAL_CAP", null, "campaign-budget", 2),
            new Row(Mode.ENFORCED, "nl", "active", "EMAIL", "GLOBAL_CAP", null, "black-friday", 1),
            new Row(
                Mode.ENFORCED, "nl", "active", "EMAIL", "GLOBAL_CAP", null, "campaign-budget", 1),
            new Row(
                Mode.ENFORCED, "nl", "active", "EMAIL", "GLOBAL_CAP", null, "email-provider", 1));
    assertThat(report.rows().get(0).reasonLabel()).isEqualTo("GLOBAL_CAP campaign-budget");
    assertThat(report.byReason(Mode.ENFORCED).totals())
        .containsExactly(
            Map.entry("GLOBAL_CAP campaign-budget", 3L),
            Map.entry("GLOBAL_CAP black-friday", 1L),
            Map.entry("GLOBAL_CAP email-provider", 1L));
  }

  @Test
  void timelinesCountByReasonAndBySegmentAndTheSpanIsKept() {
    add(3, "bf", "active", false, "CAP 1d");
    add(2, "bf", "dormant", false, "MIN_INTERVAL");

    assertThat(report.bySegment(Mode.ENFORCED).totals())
        .containsExactly(Map.entry("active", 3L), Map.entry("dormant", 2L));
    assertThat(report.byReason(Mode.ENFORCED).count(T.plusSeconds(60), "CAP 1d")).isEqualTo(1);
    assertThat(report.bySegment(Mode.SHADOW).isEmpty()).isTrue();
    assertThat(report.first()).contains(T);
    assertThat(report.last()).contains(T.plus(Duration.ofMinutes(2)));
  }
}
