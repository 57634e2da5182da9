package io.sendcap.report;

import io.sendcap.report.SuppressionReport.Mode;
import io.sendcap.report.SuppressionReport.Row;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A {@link SuppressionReport} as one self-contained HTML page: per mode, charts of suppressions
 * over time by reason and by segment, then the table of rows. It has no script and loads nothing
 * (no fonts, no images, no styles from elsewhere); its Content-Security-Policy forbids all of it.
 * Every text from records is escaped.
 */
public final class ReportPage {
  private static final String STYLE =
      """
      body { font-family: system-ui, sans-serif; color: #222; margin: 24px 32px; max-width: 1200px; }
      h1 { font-size: 24px; margin-bottom: 4px; }
      h2 { font-size: 19px; margin-top: 36px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
      p.scope { color: #555; margin: 2px 0; }
      .totals { display: flex; gap: 16px; margin: 20px 0; }
      .total { border: 1px solid #ddd; border-radius: 6px; padding: 10px 18px; min-width: 160px; }
      .total b { display: block; font-size: 26px; }
      svg { display: block; max-width: 100%; height: auto; margin: 12px 0 20px; }
      svg .chart-title { font-size: 16px; font-weight: 600; fill: #222; }
      svg .tick { font-size: 12px; fill: #444; }
      svg .legend { font-size: 13px; fill: #222; }
      svg .axis-title { font-size: 13px; fill: #555; }
      svg .empty { font-size: 15px; fill: #888; }
      svg .grid { stroke: #e6e6e6; }
      svg .axis { stroke: #777; }
      table { border-collapse: collapse; font-size: 14px; }
      th, td { text-align: left; padding: 4px 12px; border-bottom: 1px solid #eee; }
      th { border-bottom: 2px solid #ccc; }
      td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
      tr.shadow td { color: #6b4a8a; }
      tfoot td { font-weight: 600; border-bottom: none; }
      """;

  private ReportPage() {}

  /**
   * The page of {@code report}, headed {@code title}, with {@code scope} (what was read, which
   * filters) as lines under the heading.
   */
  public static String render(SuppressionReport report, String title, List<String> scope) {
    StringBuilder page = new StringBuilder();
    page.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .append("<meta http-equiv=\"Content-Security-Policy\"")
        .append(" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n")
        .append("<title>")
        .append(Svg.escape(title))
        .append("</title>\n<style>\n")
        .append(STYLE)
        .append("</style>\n</head>\n<body>\n<h1>")
        .append(Svg.escape(title))
        .append("</h1>\n");
    for (String line : scope) {
      page.append("<p class=\"scope\">").append(Svg.escape(line)).append("</p>\n");
    }
    totals(page, report);
    charts(page, report, Mode.ENFORCED, "Enforced: sends held back");
    if (report.total(Mode.SHADOW) > 0) {
      charts(
          page,
          report,
          Mode.SHADOW,
          "Shadow: sends delivered all the same (cap.mode=shadow) that the caps would have held"
              + " back");
    }
    table(page, report);
    page.append("</body>\n</html>\n");
    return page.toString();
  }

  private static void totals(StringBuilder page, SuppressionReport report) {
    page.append("<div class=\"totals\">\n");
    for (Mode mode : Mode.values()) {
      page.append("<div class=\"total\">")
          .append(mode.label())
          .append("<b>")
          .append(String.format("%,d", report.total(mode)))
          .append("</b></div>\n");
    }
    page.append("</div>\n");
  }

  private static void charts(
      StringBuilder page, SuppressionReport report, Mode mode, String heading) {
    page.append("<h2>").append(Svg.escape(heading)).append("</h2>\n");
    String what = mode.label() + " suppressions";
    page.append(
        StackedBarChart.render(
            capitalized(what) + " by reason",
            what,
            report.byReason(mode),
            colourOrder(report.byReason(Mode.ENFORCED), report.byReason(Mode.SHADOW)),
            StackedBarChart.Palette.DARK));
    page.append(
        StackedBarChart.render(
            capitalized(what) + " by segment",
            what,
            report.bySegment(mode),
            colourOrder(report.bySegment(Mode.ENFORCED), report.bySegment(Mode.SHADOW)),
            StackedBarChart.Palette.LIGHT));
  }

  /** The series of both timelines, the first's by size then the second's: one colour each. */
  private static List<String> colourOrder(Timeline enforced, Timeline shadow) {
    Set<String> order = new LinkedHashSet<>(enforced.totals().keySet());
    order.addAll(shadow.totals().keySet());
    return List.copyOf(order);
  }

  private static String capitalized(String s) {
    return Character.toUpperCase(s.charAt(0)) + s.substring(1);
  }

  private static void table(StringBuilder page, SuppressionReport report) {
    page.append("<h2>By campaign, segment, channel and reason</h2>\n<table>\n<thead><tr>");
    for (String column : List.of("mode", "campaign", "segment", "channel", "reason")) {
      page.append("<th>").append(column).append("</th>");
    }
    page.append("<th class=\"n\">count</th></tr></thead>\n<tbody>\n");
    for (Row row : report.rows()) {
      page.append("<tr class=\"").append(row.mode().label()).append("\">");
      for (String cell :
          List.of(
              row.mode().label(),
              row.campaignId(),
              row.segment(),
              row.channel(),
              row.reasonLabel())) {
        page.append("<td>").append(Svg.escape(cell)).append("</td>");
      }
      page.append("<td class=\"n\">").append(String.format("%,d", row.count())).append("</td>");
      page.append("</tr>\n");
    }
    page.append("</tbody>\n<tfoot>\n");
    for (Mode mode : Mode.values()) {
      page.append("<tr><td colspan=\"5\">total ")
          .append(mode.label())
          .append("</td><td class=\"n\">")
          .append(String.format("%,d", report.total(mode)))
          .append("</td></tr>\n");
    }
    page.append("</tfoot>\n</table>\n");
  }
}
