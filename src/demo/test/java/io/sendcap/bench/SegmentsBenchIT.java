package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.testing.Cli;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code sendcap bench segments} run end to end on a small population and an embedded broker. */
class SegmentsBenchIT {
  @Test
  void everyFigureIsMeasuredAndPrintedAsJsonLast() throws Exception {
    Cli.Result run =
        Cli.run("bench", "segments", "--users", "2000000", "--lookups", "20000", "--json");

    assertThat(run.exit()).isZero();
    JsonNode figures = run.lastLineJson();
    for (String key :
        List.of("roaring_bytes", "bloom_bytes", "lookup_median_ns", "lookup_p99_ns", "load_ms")) {
      assertThat(figures.get(key).asDouble()).as(key).isPositive();
    }
    // Four dense random segments: a bitmap container per 65,536 ids, 8 KiB each, about 1 MB.
    assertThat(figures.get("roaring_bytes").asLong()).isBetween(900_000L, 1_200_000L);
    assertThat(figures.get("bloom_bytes").asLong())
        .isGreaterThan(5 * figures.get("roaring_bytes").asLong());
  }
}
