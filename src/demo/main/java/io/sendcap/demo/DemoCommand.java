package io.sendcap.demo;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.blast.BlastOptions;
import java.io.PrintWriter;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sendcap demo}: a generated campaign blast through embedded Kafka and Redis. */
@Command(
    name = "demo",
    mixinStandardHelpOptions = true,
    description =
        "Starts an embedded Kafka broker and Redis, generates segments and a campaign blast, caps"
            + " it with the sample policies and prints what was decided.")
final class DemoCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin BlastOptions blast;

  @Option(
      names = "--poison-rate",
      description = "Share of records that are not Avro, for the DLQ (default: ${DEFAULT-VALUE}).")
  double poisonRate = 0.001;

  @Option(
      names = "--schema-registry",
      description =
          "Also starts a Schema Registry (Apicurio, Confluent-compatible API) and carries the blast"
              + " and the outputs in the Confluent wire format (avro.serde=confluent), as a"
              + " campaign engine with Confluent's serializers produces them.")
  boolean schemaRegistry;

  @Option(names = "--json", description = "Also print the summary as one JSON line, last.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    blast.validate(spec);
    if (poisonRate < 0 || poisonRate >= 1) {
      throw new ParameterException(spec.commandLine(), "--poison-rate must be in [0, 1)");
    }
    Demo.Options options =
        new Demo.Options(
            blast.sends(),
            blast.users(),
            blast.partitions(),
            poisonRate,
            blast.seed(),
            blast.policies(),
            schemaRegistry);
    Demo.Result result;
    try {
      result = new Demo(options, System.err).run();
    } catch (Demo.StoppedException e) {
      // Demo.run printed Demo.STOPPED: the JVM may exit before this line runs.
      return 130;
    }
    PrintWriter out = spec.commandLine().getOut();
    printTable(out, result);
    if (json) {
      out.println(new ObjectMapper().writeValueAsString(summary(result)));
    }
    out.flush();
    return result.tally().total() == result.sends() ? 0 : 1;
  }

  private static void printTable(PrintWriter out, Demo.Result r) {
    Tally t = r.tally();
    out.println();
    row(out, "sends", String.format("%,d", r.sends()));
    row(out, "allowed", String.format("%,d", t.allowedTotal()));
    t.allowed.forEach((segment, n) -> row(out, "  " + segment, String.format("%,d", n)));
    row(out, "suppressed", String.format("%,d", t.suppressedTotal()));
    t.suppressed.forEach((key, n) -> row(out, "  " + key, String.format("%,d", n)));
    row(out, "dead letters (DLQ)", String.format("%,d", t.deadLetters()));
    row(out, "outputs in Confluent framing", String.format("%,d", t.confluentFramed()));
    row(out, "elapsed", String.format("%.1f s", r.elapsedMs() / 1000.0));
    row(out, "sends/s", String.format("%,.0f", r.sendsPerSecond()));
    row(out, "sends decided per Redis round trip", String.format("%.1f", r.decisionsPerFlush()));
    row(out, "script calls per Redis round trip", String.format("%.1f", r.callsPerFlush()));
  }

  private static void row(PrintWriter out, String label, String value) {
    out.printf("%-34s %14s%n", label, value);
  }

  private static Map<String, Object> summary(Demo.Result r) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("sends", r.sends());
    m.put("allowed", r.tally().allowedTotal());
    m.put("suppressed", r.tally().suppressedTotal());
    m.put("dlq", r.tally().deadLetters());
    m.put("confluent_framed", r.tally().confluentFramed());
    m.put("elapsed_ms", r.elapsedMs());
    m.put("sends_per_s", Math.round(r.sendsPerSecond()));
    m.put("decisions_per_round_trip", Math.round(r.decisionsPerFlush() * 10) / 10.0);
    m.put("calls_per_round_trip", Math.round(r.callsPerFlush() * 10) / 10.0);
    return m;
  }
}
