package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class CapTest {
  @Test
  void theEmissionIntervalIsTheWindowOverTheLimitRoundedUpToTheMillisecond() {
    Cap week = new Cap("7d", Duration.ofDays(7), 5, Cap.Algorithm.TOKEN_BUCKET);
    assertThat(week.emissionIntervalMs()).isEqualTo(Duration.ofDays(7).toMillis() / 5);
    Cap day = new Cap("1d", Duration.ofDays(1), 7, Cap.Algorithm.TOKEN_BUCKET);
    assertThat(day.emissionIntervalMs()).isEqualTo(12_342_858); // 86,400,000 / 7 = 12,342,857.1
  }

  @Test
  void eachAlgorithmKeepsItsStateAsLongAsItMatters() {
    Duration hour = Duration.ofHours(1);
    assertThat(new Cap("1h", hour, 3).stateLifetime()).isEqualTo(hour);
    assertThat(new Cap("1h", hour, 3, Cap.Algorithm.FIXED_WINDOW).stateLifetime()).isEqualTo(hour);
    assertThat(new Cap("1h", hour, 3, Cap.Algorithm.SLIDING_WINDOW).stateLifetime())
        .isEqualTo(Duration.ofHours(2));
    assertThat(new Cap("1h", Duration.ofMillis(10), 3, Cap.Algorithm.TOKEN_BUCKET).stateLifetime())
        .as("three intervals of 4 ms")
        .isEqualTo(Duration.ofMillis(12));
  }

  @Test
  void aCalendarPeriodIsCountedByTheSlidingLogOnly() {
    assertThatThrownBy(
            () ->
                new Cap(
                    "calendar-day",
                    Cap.Kind.CALENDAR_DAY,
                    CalendarPeriods.LONGEST_DAY,
                    1,
                    null,
                    Cap.Algorithm.TOKEN_BUCKET))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("sliding-log only");
  }

  @Test
  void aWindowCountersLimitStaysBelowTheWindowInMilliseconds() {
    Duration second = Duration.ofSeconds(1);
    assertThat(Cap.maxLimit(Cap.Algorithm.FIXED_WINDOW, second)).isEqualTo(999);
    assertThat(Cap.maxLimit(Cap.Algorithm.SLIDING_WINDOW, second)).isEqualTo(999);
    assertThat(Cap.maxLimit(Cap.Algorithm.SLIDING_WINDOW, Duration.ofDays(7)))
        .as("limit × window below 2^50")
        .isEqualTo(1_861_606);
    assertThat(Cap.maxLimit(Cap.Algorithm.TOKEN_BUCKET, second)).isEqualTo(Integer.MAX_VALUE);
    assertThatThrownBy(() -> new Cap("1s", second, 1000, Cap.Algorithm.FIXED_WINDOW))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("at most 999");
  }

  @Test
  void algorithmsAreNamedAsInThePolicyFile() {
    assertThat(Cap.Algorithm.of("fixed-window")).contains(Cap.Algorithm.FIXED_WINDOW);
    assertThat(Cap.Algorithm.of("FIXED_WINDOW")).isEmpty();
  }
}
