package io.sendcap.report;

import java.util.List;
import java.util.Locale;

/**
 * A writer of SVG elements into a string, for charts inlined in an HTML page (which needs no
 * namespace declaration). Every text and attribute value is escaped; styling is left to the page's
 * CSS through class names.
 */
final class Svg {
  private final StringBuilder out = new StringBuilder();

  /** Starts a drawing of {@code width} by {@code height} units, described by {@code label}. */
  Svg(int width, int height, String label) {
    out.append(
        format(
            "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">%n",
            width, height, width, height, escape(label)));
  }

  /** A rectangle filled with {@code fill}, showing {@code tooltip} on hover. */
  Svg rect(double x, double y, double width, double height, String fill, String tooltip) {
    out.append(
        format(
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>%n",
            x, y, width, height, escape(fill), escape(tooltip)));
    return this;
  }

  /** A line of CSS class {@code cssClass}. */
  Svg line(double x1, double y1, double x2, double y2, String cssClass) {
    out.append(
        format(
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"%s\"/>%n",
            x1, y1, x2, y2, escape(cssClass)));
    return this;
  }

  /**
   * Text whose {@code anchor} ({@code start}, {@code middle}, {@code end}) is at ({@code x}, {@code
   * y}); each further line is set one line lower.
   */
  Svg text(double x, double y, String anchor, String cssClass, List<String> lines) {
    out.append(
        format(
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" class=\"%s\">",
            x, y, escape(anchor), escape(cssClass)));
    for (int i = 0; i < lines.size(); i++) {
      out.append(i == 0 ? "<tspan>" : format("<tspan x=\"%.1f\" dy=\"1.2em\">", x))
          .append(escape(lines.get(i)))
          .append("</tspan>");
    }
    out.append(format("</text>%n"));
    return this;
  }

  /** One line of text; see {@link #text(double, double, String, String, List)}. */
  Svg text(double x, double y, String anchor, String cssClass, String text) {
    return text(x, y, anchor, cssClass, List.of(text));
  }

  /** One line of text turned a quarter left, reading upwards, centred on ({@code x}, {@code y}). */
  Svg verticalText(double x, double y, String cssClass, String text) {
    out.append(
        format(
            "<text transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\""
                + " class=\"%s\">%s</text>%n",
            x, y, escape(cssClass), escape(text)));
    return this;
  }

  /** The drawing, closed. */
  @Override
  public String toString() {
    return out + "</svg>\n";
  }

  /**
   * Text made safe for HTML and SVG, in element content and in quoted attributes alike: markup
   * characters as entities, control characters (which XML forbids) as U+FFFD.
   */
  static String escape(String text) {
    StringBuilder b = new StringBuilder(text.length());
    text.codePoints()
        .forEach(
            c -> {
              switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> {
                  if (Character.isISOControl(c) && c != '\n' && c != '\t') {
                    b.append('\uFFFD');
                  } else {
                    b.appendCodePoint(c);
                  }
                }
              }
            });
    return b.toString();
  }

  private static String format(String pattern, Object... args) {
    return String.format(Locale.ROOT, pattern, args);
  }
}
