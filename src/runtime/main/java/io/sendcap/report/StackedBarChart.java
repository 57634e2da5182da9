package io.sendcap.report;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A stacked bar chart of a {@link Timeline} in SVG: one bar per time bucket, one colour per series
 * (the largest series; the rest stacked together as {@value #OTHERS}), a y axis with round ticks, x
 * labels at round times in UTC, and a legend giving each series' total.
 */
final class StackedBarChart {
  /** The series that get a colour of their own; any more are stacked together. */
  static final int MAX_SERIES = 8;

  /** The series that stands for the smaller series beyond {@link #MAX_SERIES}. */
  static final String OTHERS = "all others";

  static final int WIDTH = 1200;
  static final int HEIGHT = 380;
  private static final int LEFT = 84;
  private static final int TOP = 44;
  private static final int BOTTOM = 74;
  private static final int LEGEND_WIDTH = 300;
  static final int PLOT_WIDTH = WIDTH - LEFT - LEGEND_WIDTH - 20;
  private static final int PLOT_HEIGHT = HEIGHT - TOP - BOTTOM;

  /** The least room, in pixels, between two x labels ({@code 2026-11-02} at 12px is about 70). */
  static final double LABEL_SPACING = 90;

  /** The longest series name the legend shows whole, beside a count of up to ten characters. */
  static final int LEGEND_CHARS = 26;

  /**
   * The colours of a chart's series: one palette per dimension, so that a colour means one thing on
   * a page (blue is a reason in one chart, never a segment in the next). Tableau 20, whose ten hues
   * are distinct for most colour vision, in its dark tones and its light tones; grey is {@link
   * #OTHERS}'s.
   */
  enum Palette {
    /** The dark tones. */
    DARK("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#9c755f"),
    /** The light tones of the same hues, in the same order. */
    LIGHT("#a0cbe8", "#ffbe7d", "#ff9d9a", "#86bcb6", "#8cd17d", "#f1ce63", "#d4a6c8", "#d7b5a6");

    private final List<String> colours;

    Palette(String... colours) {
      this.colours = List.of(colours);
    }

    /** The palette's colours, as many as {@link #MAX_SERIES}. */
    List<String> colours() {
      return colours;
    }
  }

  private static final String OTHERS_COLOUR = "#bab0ac";

  /** Round spacings of x labels, each a whole number of some bucket sizes. */
  private static final List<Duration> LABEL_INTERVALS =
      List.of(
          Duration.ofMinutes(1),
          Duration.ofMinutes(2),
          Duration.ofMinutes(5),
          Duration.ofMinutes(10),
          Duration.ofMinutes(15),
          Duration.ofMinutes(30),
          Duration.ofHours(1),
          Duration.ofHours(2),
          Duration.ofHours(3),
          Duration.ofHours(6),
          Duration.ofHours(12),
          Duration.ofDays(1),
          Duration.ofDays(2),
          Duration.ofDays(7),
          Duration.ofDays(14),
          Duration.ofDays(28),
          Duration.ofDays(91),
          Duration.ofDays(182),
          Duration.ofDays(364));

  private static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("HH:mm").withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter DATE =
      DateTimeFormatter.ofPattern("yyyy-MM-dd").withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter MONTH_DAY =
      DateTimeFormatter.ofPattern("MM-dd").withZone(ZoneOffset.UTC);
  private static final DateTimeFormatter YEAR =
      DateTimeFormatter.ofPattern("yyyy").withZone(ZoneOffset.UTC);

  private StackedBarChart() {}

  /**
   * The chart of {@code timeline} titled {@code title}; {@code what} names what is counted. A
   * series named in {@code colourOrder} gets the colour of its place there, if it is one of the
   * first eight, so that charts drawn with the same order show a series in the same colour; the
   * colours are {@code palette}'s.
   */
  static String render(
      String title, String what, Timeline timeline, List<String> colourOrder, Palette palette) {
    Svg svg = new Svg(WIDTH, HEIGHT, title);
    svg.text(LEFT, 22, "start", "chart-title", title);
    if (timeline.isEmpty()) {
      svg.text(LEFT + PLOT_WIDTH / 2.0, TOP + PLOT_HEIGHT / 2.0, "middle", "empty", "no " + what);
      return svg.toString();
    }
    Map<String, Long> totals = shownTotals(timeline.totals());
    List<String> series = List.copyOf(totals.keySet());
    List<Instant> buckets = timeline.buckets();
    long[][] stacks = stacks(timeline, buckets, series);
    long top = yAxis(svg, highest(stacks), what + " per " + timeline.bucketSize().label());
    List<String> colours = colours(series, colourOrder, palette.colours());
    bars(svg, buckets, series, colours, stacks, top);
    xAxis(svg, buckets, timeline.bucketSize());
    legend(svg, totals, colours);
    return svg.toString();
  }

  /** The totals of the series shown: the largest, and the rest summed as {@link #OTHERS}. */
  private static Map<String, Long> shownTotals(Map<String, Long> totals) {
    if (totals.size() <= MAX_SERIES) {
      return totals;
    }
    Map<String, Long> shown = new LinkedHashMap<>();
    long others = 0;
    for (Map.Entry<String, Long> e : totals.entrySet()) {
      if (shown.size() < MAX_SERIES - 1) {
        shown.put(e.getKey(), e.getValue());
      } else {
        others += e.getValue();
      }
    }
    shown.put(OTHERS, others);
    return shown;
  }

  /** The count of each shown series in each bucket, the smaller series summed into the last. */
  private static long[][] stacks(Timeline timeline, List<Instant> buckets, List<String> series) {
    boolean folded = series.get(series.size() - 1).equals(OTHERS);
    List<String> all = List.copyOf(timeline.totals().keySet());
    long[][] stacks = new long[buckets.size()][series.size()];
    for (int b = 0; b < buckets.size(); b++) {
      for (int s = 0; s < all.size(); s++) {
        int shown = folded ? Math.min(s, series.size() - 1) : s;
        stacks[b][shown] += timeline.count(buckets.get(b), all.get(s));
      }
    }
    return stacks;
  }

  private static long highest(long[][] stacks) {
    long highest = 0;
    for (long[] stack : stacks) {
      long sum = 0;
      for (long n : stack) {
        sum += n;
      }
      highest = Math.max(highest, sum);
    }
    return highest;
  }

  /** Draws the y axis, its grid and its title, and returns the value at the top of the plot. */
  private static long yAxis(Svg svg, long highest, String title) {
    long step = niceStep(highest / 5.0);
    long top = Math.max(step, (highest + step - 1) / step * step);
    for (long v = 0; v <= top; v += step) {
      double y = y(v, top);
      svg.line(LEFT, y, LEFT + PLOT_WIDTH, y, v == 0 ? "axis" : "grid");
      svg.text(LEFT - 8, y + 4, "end", "tick", String.format("%,d", v));
    }
    svg.verticalText(18, TOP + PLOT_HEIGHT / 2.0, "axis-title", title);
    return top;
  }

  /**
   * The smallest of 1, 2 or 5 times a power of ten that is at least {@code raw}, and at least 1.
   */
  static long niceStep(double raw) {
    long magnitude = 1;
    while (true) {
      for (long m : new long[] {1, 2, 5}) {
        if (m * magnitude >= raw) {
          return m * magnitude;
        }
      }
      magnitude *= 10;
    }
  }

  private static double y(long value, long top) {
    return TOP + PLOT_HEIGHT - (double) value / top * PLOT_HEIGHT;
  }

  private static void bars(
      Svg svg,
      List<Instant> buckets,
      List<String> series,
      List<String> colours,
      long[][] stacks,
      long top) {
    double slot = (double) PLOT_WIDTH / buckets.size();
    double width = slot >= 4 ? slot * 0.8 : slot;
    for (int b = 0; b < buckets.size(); b++) {
      double x = LEFT + b * slot + (slot - width) / 2;
      long below = 0;
      for (int s = 0; s < series.size(); s++) {
        long n = stacks[b][s];
        if (n > 0) {
          double y = y(below + n, top);
          double height = y(below, top) - y;
          String tip =
              DATE.format(buckets.get(b))
                  + " "
                  + TIME.format(buckets.get(b))
                  + " UTC, "
                  + series.get(s)
                  + ": "
                  + String.format("%,d", n);
          svg.rect(x, y, width, height, colours.get(s), tip);
          below += n;
        }
      }
    }
  }

  /**
   * Draws a tick and label under every bucket that starts at a round time, the round time chosen so
   * that labels do not overlap, and the axis title under them.
   */
  private static void xAxis(Svg svg, List<Instant> buckets, BucketSize size) {
    double slot = (double) PLOT_WIDTH / buckets.size();
    long every = labelInterval(size, buckets.size());
    long origin = every % Duration.ofDays(7).toMillis() == 0 ? BucketSize.MONDAY : 0;
    boolean daily = size.millis() >= Duration.ofDays(1).toMillis();
    String previousCoarse = null;
    double base = TOP + PLOT_HEIGHT;
    for (int b = 0; b < buckets.size(); b++) {
      Instant start = buckets.get(b);
      if (Math.floorMod(start.toEpochMilli() - origin, every) != 0) {
        continue;
      }
      double x = LEFT + (b + 0.5) * slot;
      String fine = (daily ? MONTH_DAY : TIME).format(start);
      String coarse = (daily ? YEAR : DATE).format(start);
      svg.line(x, base, x, base + 5, "axis");
      svg.text(
          x,
          base + 18,
          "middle",
          "tick",
          coarse.equals(previousCoarse) ? List.of(fine) : List.of(fine, coarse));
      previousCoarse = coarse;
    }
    svg.text(
        LEFT + PLOT_WIDTH / 2.0,
        HEIGHT - 10,
        "middle",
        "axis-title",
        "decidedAt, UTC (one bar per "
            + size.label()
            + (size == BucketSize.WEEK ? ", from Monday)" : ")"));
  }

  /**
   * The time between two labelled buckets: the shortest round interval, a whole number of buckets,
   * that leaves {@link #LABEL_SPACING} pixels between labels.
   */
  static long labelInterval(BucketSize size, int buckets) {
    double slot = (double) PLOT_WIDTH / buckets;
    long bucketsApart = (long) Math.ceil(LABEL_SPACING / slot);
    for (Duration d : LABEL_INTERVALS) {
      long ms = d.toMillis();
      if (ms % size.millis() == 0 && ms / size.millis() >= bucketsApart) {
        return ms;
      }
    }
    return bucketsApart * size.millis();
  }

  /** Each series' colour, name and total, the total right-aligned at the drawing's edge. */
  private static void legend(Svg svg, Map<String, Long> totals, List<String> colours) {
    double x = LEFT + PLOT_WIDTH + 24;
    List<String> series = new ArrayList<>(totals.keySet());
    for (int s = 0; s < series.size(); s++) {
      String name = series.get(s);
      String total = String.format("%,d", totals.get(name));
      double y = TOP + s * 22;
      svg.rect(x, y, 14, 14, colours.get(s), name + ": " + total);
      svg.text(x + 22, y + 12, "start", "legend", shorten(name));
      svg.text(WIDTH - 8, y + 12, "end", "legend", total);
    }
  }

  /**
   * A name of at most {@link #LEGEND_CHARS} characters: a longer one keeps its start and its end,
   * where names of one family differ (segment-2025-q4-..., ...-de, ...-fr).
   */
  static String shorten(String name) {
    if (name.codePointCount(0, name.length()) <= LEGEND_CHARS) {
      return name;
    }
    int head = (LEGEND_CHARS - 1) / 2;
    int tail = LEGEND_CHARS - 1 - head;
    return name.substring(0, name.offsetByCodePoints(0, head))
        + "…"
        + name.substring(name.offsetByCodePoints(name.length(), -tail));
  }

  /**
   * The colour of each series: {@link #OTHERS} grey, a series among the first eight of {@code
   * colourOrder} the colour of its place there, and the others the colours left over.
   */
  private static List<String> colours(
      List<String> series, List<String> colourOrder, List<String> palette) {
    String[] colours = new String[series.size()];
    Set<String> used = new HashSet<>();
    for (int s = 0; s < series.size(); s++) {
      int place = colourOrder.indexOf(series.get(s));
      if (series.get(s).equals(OTHERS) && s == series.size() - 1) {
        colours[s] = OTHERS_COLOUR;
      } else if (place >= 0 && place < palette.size() && used.add(palette.get(place))) {
        colours[s] = palette.get(place);
      }
    }
    for (int s = 0; s < series.size(); s++) {
      for (int c = 0; colours[s] == null; c++) {
        if (used.add(palette.get(c))) {
          colours[s] = palette.get(c);
        }
      }
    }
    return List.of(colours);
  }
}
