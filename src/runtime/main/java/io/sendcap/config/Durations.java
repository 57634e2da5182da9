package io.sendcap.config;

import java.time.Duration;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the short durations of the configuration: a whole number and a unit, as in {@code 7d}. */
public final class Durations {
  /** What a duration may look like, for error messages. */
  public static final String ALLOWED =
      "a positive whole number followed by ms, s, m, h, d or w, at most 3650d";

  /**
   * The longest duration accepted: about ten years. Windows are added to epoch milliseconds in Java
   * and in Lua, so an unbounded one would overflow long before it made sense as a cap.
   */
  public static final Duration MAX = Duration.ofDays(3650);

  private static final Pattern FORMAT = Pattern.compile("(\\d{1,12})(ms|s|m|h|d|w)");

  private Durations() {}

  /** Returns the duration written as {@code text}, or empty if it is not a positive duration. */
  public static Optional<Duration> parse(String text) {
    Matcher m = FORMAT.matcher(text == null ? "" : text.trim());
    if (!m.matches()) {
      return Optional.empty();
    }
    long n = Long.parseLong(m.group(1));
    Duration d =
        switch (m.group(2)) {
          case "ms" -> Duration.ofMillis(n);
          case "s" -> Duration.ofSeconds(n);
          case "m" -> Duration.ofMinutes(n);
          case "h" -> Duration.ofHours(n);
          case "d" -> Duration.ofDays(n);
          default -> Duration.ofDays(7 * n);
        };
    return d.isZero() || d.compareTo(MAX) > 0 ? Optional.empty() : Optional.of(d);
  }
}
