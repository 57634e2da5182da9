package io.sendcap.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class StackedBarChartTest {
  private static final Instant T = Instant.parse("2026-11-20T10:00:00Z");

  @Test
  void xLabelsAreAWholeNumberOfBucketsApartAndNeverCloserThanTheirWidth() {
    for (BucketSize size : BucketSize.values()) {
      for (int buckets = 1; buckets <= 1_000; buckets++) {
        long interval = StackedBarChart.labelInterval(size, buckets);
        double slot = (double) StackedBarChart.PLOT_WIDTH / buckets;
        assertThat(interval % size.millis()).as("%s x %d", size, buckets).isZero();
        assertThat(interval / size.millis() * slot)
            .as("%s x %d", size, buckets)
            .isGreaterThanOrEqualTo(StackedBarChart.LABEL_SPACING);
      }
    }
  }

  @Test
  void yTicksAreOneTwoOrFiveTimesAPowerOfTen() {
    assertThat(StackedBarChart.niceStep(0)).isEqualTo(1);
    assertThat(StackedBarChart.niceStep(0.6)).isEqualTo(1);
    assertThat(StackedBarChart.niceStep(3)).isEqualTo(5);
    assertThat(StackedBarChart.niceStep(7)).isEqualTo(10);
    assertThat(StackedBarChart.niceStep(1_200)).isEqualTo(2_000);
  }

  @Test
  void hourlyBarsAreLabelledAtRoundHoursWithTheDateWhereItChanges() {
    Timeline timeline = new Timeline();
    for (int h = 0; h < 40; h++) {
      timeline.add(T.plus(Duration.ofHours(h)), h % 2 == 0 ? "CAP 1d" : "MIN_INTERVAL");
    }

    String svg =
        StackedBarChart.render(
            "By reason", "suppressions", timeline, List.of(), StackedBarChart.Palette.DARK);

    assertThat(svg)
        .contains("suppressions per hour")
        .contains("decidedAt, UTC (one bar per hour)")
        .contains("<tspan>12:00</tspan><tspan x=")
        .contains(">2026-11-20</tspan>")
        .contains(">2026-11-21</tspan>")
        .contains("<title>CAP 1d: 20</title>")
        .contains("<title>MIN_INTERVAL: 20</title>")
        .doesNotContain("<tspan>11:00</tspan>");
  }

  @Test
  void beyondEightSeriesTheSmallestAreStackedTogether() {
    Timeline timeline = new Timeline();
    for (int s = 0; s < 10; s++) {
      for (int n = 0; n <= s; n++) {
        timeline.add(T, "segment-" + s);
      }
    }

    String svg =
        StackedBarChart.render(
            "By segment", "suppressions", timeline, List.of(), StackedBarChart.Palette.DARK);

    assertThat(svg)
        .contains("<title>segment-9: 10</title>")
        .contains("<title>segment-3: 4</title>")
        .doesNotContain("<title>segment-2: ")
        .contains("<title>" + StackedBarChart.OTHERS + ": 6</title>");
  }

  @Test
  void longNamesKeepTheirStartAndEndSoThatNamesOfOneFamilyStayApart() {
    String de = StackedBarChart.shorten("winter-sale-2026-returning-customers-de");
    String fr = StackedBarChart.shorten("winter-sale-2026-returning-customers-fr");

    assertThat(de).hasSize(StackedBarChart.LEGEND_CHARS).startsWith("winter-sale-").endsWith("-de");
    assertThat(fr).isNotEqualTo(de);
    assertThat(StackedBarChart.shorten("active")).isEqualTo("active");
  }

  @Test
  void aSeriesKeepsItsColourAcrossChartsDrawnWithOneOrder() {
    Timeline enforced = new Timeline();
    enforced.add(T, "CAP 1d");
    enforced.add(T, "CAP 1d");
    enforced.add(T, "MIN_INTERVAL");
    Timeline shadow = new Timeline();
    shadow.add(T, "MIN_INTERVAL");
    List<String> order = List.of("CAP 1d", "MIN_INTERVAL");

    String second = "fill=\"#f28e2b\"><title>MIN_INTERVAL";
    assertThat(
            StackedBarChart.render(
                "e", "suppressions", enforced, order, StackedBarChart.Palette.DARK))
        .contains(second);
    assertThat(
            StackedBarChart.render(
                "s", "suppressions", shadow, order, StackedBarChart.Palette.DARK))
        .contains(second);
  }

  @Test
  void anEmptyTimelineSaysSoInsteadOfDrawingAxes() {
    String svg =
        StackedBarChart.render(
            "By reason",
            "shadow suppressions",
            new Timeline(),
            List.of(),
            StackedBarChart.Palette.DARK);

    assertThat(svg).contains("no shadow suppressions").doesNotContain("<rect");
  }
}
