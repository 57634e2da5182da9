package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.testing.Cli;
import org.junit.jupiter.api.Test;

/** {@code sendcap demo} as a newcomer runs it, on its own embedded Kafka and Redis. */
class DemoIT {
  @Test
  void theDemoDecidesEverySendAndEndsWithAJsonSummary() throws Exception {
    Cli.Result run =
        Cli.run("demo", "--sends", "20000", "--users", "2000", "--poison-rate", "0.01", "--json");

    assertThat(run.exit()).isZero();
    assertThat(run.lines()).anyMatch(l -> l.startsWith("suppressed"));
    JsonNode summary = run.lastLineJson();
    long sends = summary.get("sends").asLong();
    assertThat(sends).isEqualTo(20_000);
    assertThat(
            summary.get("allowed").asLong()
                + summary.get("suppressed").asLong()
                + summary.get("dlq").asLong())
        .isEqualTo(sends);
    assertThat(summary.get("dlq").asLong()).isBetween(100L, 300L);
    assertThat(summary.get("suppressed").asLong()).isPositive();
    assertThat(summary.get("elapsed_ms").asLong()).isPositive();
    assertThat(summary.get("sends_per_s").asLong()).isPositive();
  }
}
