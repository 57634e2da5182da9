package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.withinPercentage;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.testing.Cli;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code sendcap bench limiter} run end to end with a small workload on an embedded Redis. */
class LimiterBenchIT {
  @Test
  void everyFigureIsMeasuredAndPrintedAsJsonLast() throws Exception {
    Cli.Result run =
        Cli.run(
            "bench",
            "limiter",
            "--sends",
            "4000",
            "--users",
            "400",
            "--one-at-a-time-sends",
            "500",
            "--memory-users",
            "300",
            "--json");

    assertThat(run.exit()).isZero();
    JsonNode figures = run.lastLineJson();
    for (String key :
        List.of(
            "pipelined_per_s",
            "ceiling_per_s",
            "ceiling_measured_per_s",
            "one_at_a_time_per_s",
            "seed_ceiling_per_s",
            "bucket4j_per_s",
            "redisson_per_s",
            "bytes_per_user",
            "one_per_call_ceiling_per_s",
            "redis_cpu_us_per_decision",
            "pipelined_redis_cpu_us_per_decision",
            "one_per_call_redis_cpu_us_per_decision",
            "seed_redis_cpu_us_per_decision")) {
      assertThat(figures.get(key).asDouble()).as(key).isPositive();
    }
    assertThat(run.lines()).anyMatch(l -> l.startsWith("sendcap ceiling / seed ceiling"));
    assertThat(figures.get("ceiling_below_pipelined").isBoolean()).isTrue();
    // Redis decides on one thread: it cannot be on the CPU for longer than a run lasted
    for (String busy : List.of("ceiling_redis_busy", "pipelined_redis_busy")) {
      assertThat(figures.get(busy).asDouble()).as(busy).isPositive().isLessThanOrEqualTo(1.1);
    }
    // the ceiling is 1 s of Redis CPU over the cheaper of the two measured costs per decision
    double cheaper =
        Math.min(
            figures.get("redis_cpu_us_per_decision").asDouble(),
            figures.get("pipelined_redis_cpu_us_per_decision").asDouble());
    assertThat(figures.get("ceiling_per_s").asDouble())
        .isCloseTo(1e6 / cheaper, withinPercentage(1));
  }
}
