package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.assertj.core.api.Assertions.withinPercentage;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.testing.Cli;
import org.junit.jupiter.api.Test;

/**
 * {@code sendcap bench pipeline} run end to end with a small blast, on its own embedded broker and
 * Redis. Only that every figure is there and every send accounted for is checked, never a rate.
 */
class PipelineBenchIT {
  @Test
  void bothRunsAccountForEverySendAndTheFiguresArePrintedAsJsonLast() {
    Cli.Result run = Cli.run("bench", "pipeline", "--sends", "20000", "--users", "2000", "--json");

    assertThat(run.exit()).isZero();
    assertThat(run.lines()).anyMatch(l -> l.startsWith("capped / pass-through"));
    // the bars of issue 16 stand beside the figures they are on: the whole JVM's, with the JIT
    assertThat(run.lines())
        .anyMatch(l -> l.startsWith("JVM CPU per record, capped / p-t") && l.endsWith("<= 2.0"))
        .anyMatch(l -> l.startsWith("Redis CPU per decision, us") && l.endsWith("<= 10"))
        .noneMatch(l -> l.startsWith("the same without the JIT") && l.contains("target"));
    JsonNode figures = run.lastLineJson();
    assertEverySendAccountedFor(figures, 20_000);
    // the application's own threads are found by name: the stream threads work in both runs, and
    // only the capped one talks to Redis
    JsonNode capped = figures.get("capped_jvm_cpu_us_per_record_by_share");
    JsonNode passthrough = figures.get("passthrough_jvm_cpu_us_per_record_by_share");
    assertThat(capped.get("stream_threads").asDouble()).isPositive();
    assertThat(passthrough.get("stream_threads").asDouble()).isPositive();
    assertThat(capped.get("redis_client").asDouble()).isPositive();
    assertThat(passthrough.get("redis_client").asDouble()).isZero();
    // the cores a run kept busy are its CPU per record times its records per second
    assertThat(figures.get("capped_jvm_cores").asDouble())
        .isCloseTo(
            figures.get("capped_jvm_cpu_us_per_record").asDouble()
                * figures.get("capped_per_s").asDouble()
                / 1e6,
            withinPercentage(10));
    assertThat(figures.get("passthrough_jvm_cores").asDouble()).isPositive();
    // the bar's figure is in the JSON as printed, and is the ratio of the two figures per record
    assertThat(figures.get("jvm_cpu_ratio").asDouble())
        .isEqualTo(cell(run, "JVM CPU per record, capped / p-t"));
    assertThat(figures.get("jvm_cpu_ratio_without_jit").asDouble())
        .isEqualTo(cell(run, "the same without the JIT compiler's"));
    assertThat(figures.get("jvm_cpu_ratio").asDouble())
        .isCloseTo(
            figures.get("capped_jvm_cpu_us_per_record").asDouble()
                / figures.get("passthrough_jvm_cpu_us_per_record").asDouble(),
            withinPercentage(5));
    assertThat(figures.get("capped_redis_cores").asDouble()).isPositive();
    // the page faults are read from /proc on Linux, where the bench runs: a number, never null
    for (String key :
        new String[] {
          "capped_minor_faults_per_1000_records", "passthrough_minor_faults_per_1000_records"
        }) {
      assertThat(figures.get(key).isNumber()).as(key).isTrue();
      assertThat(figures.get(key).asDouble()).as(key).isNotNegative();
    }
    // each pipeline's two timed runs apart, in the order they ran: both decided every send, so the
    // figure of the two together is their mean
    String[] each = cells(run, "JVM CPU per record, 1st / 2nd run, us");
    assertThat(mean(each[0]))
        .isCloseTo(figures.get("capped_jvm_cpu_us_per_record").asDouble(), within(0.11));
    assertThat(mean(each[1]))
        .isCloseTo(figures.get("passthrough_jvm_cpu_us_per_record").asDouble(), within(0.11));
    String[] jit = cells(run, "  the JIT compiler's, 1st / 2nd run");
    assertThat(mean(jit[0])).isCloseTo(capped.get("jit_compiler").asDouble(), within(0.11));
    assertThat(mean(jit[1])).isCloseTo(passthrough.get("jit_compiler").asDouble(), within(0.11));
  }

  /** The capped and pass-through cells of the text line labelled {@code label}. */
  private static String[] cells(Cli.Result run, String label) {
    String line = line(run, label);
    // two cells of "first / second", each 14 characters wide and right-aligned after the label's 40
    return new String[] {line.substring(41, 55).trim(), line.substring(56).trim()};
  }

  /** The one figure of the text line labelled {@code label}, before any target. */
  private static double cell(Cli.Result run, String label) {
    String line = line(run, label);
    return Double.parseDouble(line.substring(label.length()).trim().split("\\s+")[0]);
  }

  /** The text line labelled {@code label}. */
  private static String line(Cli.Result run, String label) {
    return run.lines().stream()
        .filter(l -> l.startsWith(label))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no line " + label + " in " + run.lines()));
  }

  /** The mean of a cell "first / second". */
  private static double mean(String cell) {
    String[] runs = cell.split(" / ");
    assertThat(runs).as(cell).hasSize(2);
    return (Double.parseDouble(runs[0]) + Double.parseDouble(runs[1])) / 2;
  }

  @Test
  void twoInstancesCapAgainstARedisCluster() {
    Cli.Result run =
        Cli.run(
            "bench",
            "pipeline",
            "--sends",
            "10000",
            "--users",
            "2000",
            "--instances",
            "2",
            "--redis-cluster-nodes",
            "3",
            "--json");

    assertThat(run.exit()).isZero();
    JsonNode figures = run.lastLineJson();
    assertEverySendAccountedFor(figures, 10_000);
    assertThat(figures.get("instances").asInt()).isEqualTo(2);
    assertThat(figures.get("redis_cluster_nodes").asInt()).isEqualTo(3);
    assertThat(run.lines())
        .anyMatch(l -> l.startsWith("sends decided per script call") && l.endsWith(">= 8"))
        .anyMatch(l -> l.startsWith("Redis CPU per decision, us") && l.endsWith("<= 15"));
  }

  @Test
  void aClusterOfTwoNodesIsRefused() {
    Cli.Result run = Cli.run("bench", "pipeline", "--redis-cluster-nodes", "2");

    assertThat(run.exit()).isEqualTo(2);
  }

  private static void assertEverySendAccountedFor(JsonNode figures, long sends) {
    assertThat(figures.get("sends").asLong()).isEqualTo(sends);
    assertThat(
            figures.get("allowed").asLong()
                + figures.get("suppressed").asLong()
                + figures.get("dlq").asLong())
        .isEqualTo(sends);
    assertThat(figures.get("suppressed").asLong()).isPositive();
    assertThat(figures.get("passthrough_records").asLong()).isEqualTo(sends);
    assertThat(figures.get("capped_per_s").asDouble()).isPositive();
    assertThat(figures.get("passthrough_per_s").asDouble()).isPositive();
    assertThat(figures.get("decisions_per_round_trip").asDouble()).isPositive();
    assertThat(figures.get("capped_limiter_wait_share").asDouble()).isBetween(0.0, 1.0);
    assertThat(figures.get("peak_heap_bytes").asLong()).isPositive();
  }
}
