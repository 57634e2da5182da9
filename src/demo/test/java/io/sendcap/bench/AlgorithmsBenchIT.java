package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.config.Cap;
import io.sendcap.testing.Cli;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code sendcap bench algorithms} run end to end with small workloads on an embedded Redis. */
class AlgorithmsBenchIT {
  @Test
  void everyAlgorithmIsMeasuredInOneRunAndPrintedAsATableAndJson() {
    Cli.Result run =
        Cli.run(
            "bench",
            "algorithms",
            "--sends",
            "4000",
            "--users",
            "100",
            "--memory-users",
            "300",
            "--json");

    assertThat(run.exit()).as(run.err()).isZero();
    JsonNode algorithms = run.lastLineJson().get("algorithms");
    List<String> names = List.of("sliding-log", "sliding-window", "fixed-window", "token-bucket");
    assertThat(algorithms.fieldNames()).toIterable().containsExactlyElementsOf(names);
    for (String name : names) {
      JsonNode a = algorithms.get(name);
      for (String key :
          List.of(
              "decisions_per_s",
              "redis_cpu_us_per_decision",
              "redis_calls_per_decision",
              "allowed_share",
              "bytes_per_user_sends_1h_apart",
              "bytes_per_user_sends_25h_apart",
              "overshoot_uniform",
              "overshoot_bursts")) {
        assertThat(a.get(key).asDouble()).as(name + " " + key).isPositive();
      }
      assertThat(run.lines()).as("a row of the table").anyMatch(l -> l.startsWith(name + " "));
    }
    JsonNode log = algorithms.get("sliding-log");
    assertThat(log.get("overshoot_bursts").asDouble()).isEqualTo(1.0);
    assertThat(log.get("overshoot_uniform").asDouble()).isLessThanOrEqualTo(1.0);
    assertThat(log.get("over_limit_share").asDouble()).isZero();
    assertThat(algorithms.get("fixed-window").get("overshoot_bursts").asDouble())
        .isGreaterThan(1.0);
  }

  @Test
  void theOvershootIsTheMostSendsInAnyWindowEndingAtASendOverTheLimit() {
    assertThat(AlgorithmsBench.overshoot(new long[] {0, 10, 20}, 10, 1)).isEqualTo(1.0);
    assertThat(AlgorithmsBench.overshoot(new long[] {20, 9, 0, 10}, 10, 2)).isEqualTo(1.0);
    assertThat(AlgorithmsBench.overshoot(new long[] {20, 9, 0, 10}, 11, 2)).isEqualTo(1.5);
    assertThat(AlgorithmsBench.overshoot(new long[] {0, 9, 10, 11}, 10, 2)).isEqualTo(1.5);
    assertThat(AlgorithmsBench.overshoot(new long[] {}, 10, 2)).isZero();
  }

  @Test
  void theBurstsStraddleADayBoundaryAlignedToTheEpoch() {
    List<io.sendcap.limit.CapRequest> bursts =
        AlgorithmsBench.bursts(AlgorithmsBench.policy(Cap.Algorithm.FIXED_WINDOW), 3);
    long day = AlgorithmsBench.BURST_WINDOW.toMillis();
    assertThat(bursts.get(2).now() % day).isEqualTo(day - 1);
    assertThat(bursts.get(3).now() % day).isZero();
    assertThat(bursts).hasSize(6 + 2 * AlgorithmsBench.BURST_STEPS);
  }
}
