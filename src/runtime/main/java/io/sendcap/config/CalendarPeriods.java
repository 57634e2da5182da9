package io.sendcap.config;

import java.time.DayOfWeek;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneId;
import java.time.temporal.TemporalAdjusters;

/** The calendar periods of calendar caps, in a time zone. */
public final class CalendarPeriods {
  /** The longest a calendar day can last (a daylight-saving change adds an hour). */
  public static final Duration LONGEST_DAY = Duration.ofHours(25);

  /** The longest a calendar week can last. */
  public static final Duration LONGEST_WEEK = Duration.ofDays(7).plusHours(1);

  /** The longest a calendar month can last. */
  public static final Duration LONGEST_MONTH = Duration.ofDays(31).plusHours(1);

  private CalendarPeriods() {}

  /**
   * The period of {@code kind} that contains {@code now} in {@code zone}.
   *
   * @param kind a calendar kind; not {@link Cap.Kind#ROLLING}
   */
  public static Period of(Cap.Kind kind, Instant now, ZoneId zone) {
    LocalDate date = now.atZone(zone).toLocalDate();
    LocalDate first =
        switch (kind) {
          case CALENDAR_DAY -> date;
          case CALENDAR_WEEK -> date.with(TemporalAdjusters.previousOrSame(DayOfWeek.MONDAY));
          case CALENDAR_MONTH -> date.withDayOfMonth(1);
          case ROLLING -> throw new IllegalArgumentException("a rolling window has no period");
        };
    LocalDate next =
        switch (kind) {
          case CALENDAR_DAY -> first.plusDays(1);
          case CALENDAR_WEEK -> first.plusWeeks(1);
          default -> first.plusMonths(1);
        };
    return new Period(
        first.atStartOfDay(zone).toInstant().toEpochMilli(),
        next.atStartOfDay(zone).toInstant().toEpochMilli());
  }

  /**
   * A calendar period: from {@code start} (inclusive) to {@code end} (exclusive), in epoch ms.
   *
   * @param start the first millisecond of the period
   * @param end the first millisecond of the next period
   */
  public record Period(long start, long end) {}
}
