package io.sendcap.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.SendcapConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class AvroJsonTest {
  private static final Instant NOW = Instant.parse("2031-03-04T05:06:07.089Z");

  private static Instant scheduledAt(String value) {
    return AvroJson.read(
            "{\"messageId\": \"m-1\", \"campaignId\": \"c\", \"userId\": 7, \"channel\": \"EMAIL\","
                + " \"scheduledAt\": "
                + value
                + "}",
            ScheduledSend.class,
            NOW)
        .getScheduledAt();
  }

  @Test
  void aTimestampIsAnInstantEpochMillisecondsOrRelativeToNow() {
    assertThat(scheduledAt("\"2026-11-24T09:00:00Z\"")).isEqualTo("2026-11-24T09:00:00Z");
    assertThat(scheduledAt("1700000000000")).isEqualTo(Instant.ofEpochMilli(1_700_000_000_000L));
    assertThat(scheduledAt("\"now\"")).isEqualTo(NOW);
    assertThat(scheduledAt("\"now+5m\"")).isEqualTo(NOW.plus(Duration.ofMinutes(5)));
    assertThat(scheduledAt("\"now-1d\"")).isEqualTo(NOW.minus(Duration.ofDays(1)));
    assertThat(scheduledAt("\"now+90s\"")).isEqualTo(NOW.plusSeconds(90));
  }

  @Test
  void aBadTimestampNamesTheFieldAndWhatIsAllowed() {
    assertThatThrownBy(() -> scheduledAt("\"now+5x\""))
        .hasMessageContaining("ScheduledSend.scheduledAt")
        .hasMessageContaining("ms, s, m, h, d or w");
    assertThatThrownBy(() -> scheduledAt("\"tomorrow\""))
        .hasMessage(
            "ScheduledSend.scheduledAt must be an ISO-8601 instant, epoch milliseconds, now, or"
                + " now+/- a duration such as now+5m, was \"tomorrow\"");
  }

  /**
   * README's walk-through produces the example sends; a send more than cap.max-skew.ms from the
   * time it is produced goes to the dead-letter topic, so the files must not carry fixed dates that
   * stop working a week after they were written.
   */
  @Test
  void theExampleSendsAreDueWhenTheyAreProducedWhateverTheDay() throws IOException {
    Duration skew = SendcapConfig.load(Path.of("config/sendcap.properties")).maxSkew();
    List<Path> files;
    try (Stream<Path> all = Files.list(Path.of("config/examples"))) {
      files = all.filter(p -> p.toString().endsWith(".jsonl")).sorted().toList();
    }
    assertThat(files).isNotEmpty();
    for (Instant producedAt : List.of(NOW, NOW.plus(Duration.ofDays(400)))) {
      for (Path file : files) {
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
          Instant at = AvroJson.read(line, ScheduledSend.class, producedAt).getScheduledAt();
          assertThat(Duration.between(producedAt, at).abs())
              .as("%s: %s produced at %s", file, line, producedAt)
              .isLessThan(skew);
        }
      }
    }
  }
}
