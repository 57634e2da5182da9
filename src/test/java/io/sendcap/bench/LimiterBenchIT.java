package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.app.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code sendcap bench limiter} run end to end with a small workload on an embedded Redis. */
class LimiterBenchIT {
  @Test
  void everyFigureIsMeasuredAndPrintedAsJsonLast() throws Exception {
    StringWriter out = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setOut(new PrintWriter(out));

    int exit =
        cli.execute(
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

    assertThat(exit).isZero();
    List<String> lines = out.toString().lines().toList();
    JsonNode figures = new ObjectMapper().readTree(lines.get(lines.size() - 1));
    for (String key :
        List.of(
            "pipelined_per_s",
            "ceiling_per_s",
            "one_at_a_time_per_s",
            "seed_ceiling_per_s",
            "bucket4j_per_s",
            "redisson_per_s",
            "bytes_per_user")) {
      assertThat(figures.get(key).asDouble()).as(key).isPositive();
    }
    assertThat(lines).anyMatch(l -> l.startsWith("sendcap ceiling / seed ceiling"));
  }
}
