package io.sendcap.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.testing.Cli;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.TypeConversionException;

/** {@code sendcap report}'s options, checked before it asks the broker anything. */
class ReportCommandTest {
  private final ReportCommand.InstantConverter instants = new ReportCommand.InstantConverter();

  @Test
  void timesAreInstantsDatesAtMidnightUtcOrEpochMilliseconds() {
    assertThat(instants.convert("2026-11-02T06:30:00Z"))
        .isEqualTo(Instant.parse("2026-11-02T06:30:00Z"));
    assertThat(instants.convert("2026-11-02")).isEqualTo(Instant.parse("2026-11-02T00:00:00Z"));
    assertThat(instants.convert("1793600000000")).isEqualTo(Instant.ofEpochMilli(1793600000000L));
    assertThatThrownBy(() -> instants.convert("yesterday"))
        .isInstanceOf(TypeConversionException.class)
        .hasMessage(
            "'yesterday' is not an ISO-8601 instant (2026-11-02T06:00:00Z), a date (2026-11-02) or"
                + " epoch milliseconds");
  }

  @Test
  void anEmptyPeriodIsRefused() {
    Cli.Result r = Cli.run("report", "--since", "2026-11-03", "--until", "2026-11-02");

    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err().strip())
        .isEqualTo(
            "sendcap: --since 2026-11-03T00:00:00Z is not before --until 2026-11-02T00:00:00Z");
  }

  @Test
  void aPageInADirectoryThatDoesNotExistIsRefusedBeforeReading() {
    Cli.Result r = Cli.run("report", "--html", "/no/such/dir/report.html");

    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err().strip())
        .isEqualTo("sendcap: cannot write /no/such/dir/report.html: its directory does not exist");
  }
}
