package io.sendcap.bench;

import picocli.CommandLine.Command;

/** {@code sendcap bench}: the performance figures of DESIGN.md, each measured in one run. */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Measures sendcap's performance; each subcommand prints one table from one run.",
    subcommands = {
      LimiterBenchCommand.class,
      AlgorithmsBenchCommand.class,
      SegmentsBenchCommand.class,
      PipelineBenchCommand.class
    })
public final class BenchCommand {}
