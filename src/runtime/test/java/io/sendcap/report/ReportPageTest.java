package io.sendcap.report;

import static io.sendcap.avro.Channel.EMAIL;
import static io.sendcap.avro.SuppressionReason.CAP;
import static io.sendcap.avro.SuppressionReason.MIN_INTERVAL;
import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.testing.Suppressions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ReportPageTest {
  private static final Instant T = Instant.parse("2026-11-20T10:00:00Z");
  private static final String SCRIPT = "<script>alert(\"x\")</script>";

  private final SuppressionReport report = new SuppressionReport();

  private static int count(String text, String what) {
    return (int) Pattern.compile(Pattern.quote(what)).matcher(text).results().count();
  }

  @Test
  void textFromRecordsIsEscapedEverywhere() {
    report.add(Suppressions.of(SCRIPT, "seg<b>&", EMAIL, CAP, "1d", false, T));

    String page =
        ReportPage.render(report, "Suppressed <sends>", List.of("Only --campaign " + SCRIPT));

    assertThat(page)
        .doesNotContain("<script")
        .doesNotContain("seg<b>")
        .contains("<td>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;</td>")
        .contains("<td>seg&lt;b&gt;&amp;</td>")
        .contains("<title>seg&lt;b&gt;&amp;: 1</title>")
        .contains("<h1>Suppressed &lt;sends&gt;</h1>");
  }

  @Test
  void thePageLoadsNothingFromElsewhere() {
    report.add(Suppressions.of("bf", "active", EMAIL, CAP, "1d", false, T));

    String page = ReportPage.render(report, "Suppressed sends", List.of());

    assertThat(page)
        .contains("Content-Security-Policy")
        .doesNotContain("://")
        .doesNotContain("src=")
        .doesNotContain("url(")
        .doesNotContain("@import")
        .doesNotContain("<link")
        .doesNotContain("<script");
  }

  @Test
  void enforcedAndShadowEachGetChartsByReasonAndBySegmentAndTheirOwnTotals() {
    for (int i = 0; i < 6; i++) {
      Instant at = T.plus(Duration.ofHours(i));
      report.add(Suppressions.of("bf", "active", EMAIL, CAP, "1d", false, at));
      report.add(Suppressions.of("bf", "dormant", EMAIL, MIN_INTERVAL, null, true, at));
    }
    report.add(Suppressions.of("bf", "dormant", EMAIL, MIN_INTERVAL, null, true, T));

    String page = ReportPage.render(report, "Suppressed sends", List.of());

    assertThat(count(page, "<svg ")).isEqualTo(4);
    assertThat(page)
        .contains(">Enforced suppressions by reason<")
        .contains(">Enforced suppressions by segment<")
        .contains(">Shadow suppressions by reason<")
        .contains(">Shadow suppressions by segment<")
        .contains("<title>CAP 1d: 6</title>")
        .contains("<title>MIN_INTERVAL: 7</title>")
        .contains("one bar per 5 minutes")
        .contains("<td colspan=\"5\">total enforced</td><td class=\"n\">6</td>")
        .contains("<td colspan=\"5\">total shadow</td><td class=\"n\">7</td>");
  }

  @Test
  void withoutShadowSuppressionsThereAreNoShadowCharts() {
    report.add(Suppressions.of("bf", "active", EMAIL, CAP, "1d", false, T));

    String page = ReportPage.render(report, "Suppressed sends", List.of());

    assertThat(count(page, "<svg ")).isEqualTo(2);
    assertThat(page).doesNotContain("Shadow suppressions by");
  }

  @Test
  void aColourMeansOneThingOnThePageAReasonOrASegment() {
    report.add(Suppressions.of("bf", "active", EMAIL, CAP, "1d", false, T));
    report.add(Suppressions.of("bf", "dormant", EMAIL, MIN_INTERVAL, null, false, T));

    String page = ReportPage.render(report, "Suppressed sends", List.of());

    int bySegment = page.indexOf(">Enforced suppressions by segment<");
    assertThat(bySegment).isPositive();
    Set<String> reasonColours = fills(page.substring(0, bySegment));
    Set<String> segmentColours = fills(page.substring(bySegment));
    assertThat(reasonColours).hasSize(2);
    assertThat(segmentColours).hasSize(2).doesNotContainAnyElementsOf(reasonColours);
  }

  private static Set<String> fills(String svg) {
    Set<String> fills = new TreeSet<>();
    Matcher m = Pattern.compile("<rect [^>]*fill=\"(#[0-9a-f]{6})\"").matcher(svg);
    while (m.find()) {
      fills.add(m.group(1));
    }
    return fills;
  }
}
