package io.sendcap.app;

import io.sendcap.bench.BenchCommand;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.segment.SegmentFiles;
import io.sendcap.segment.SegmentTopic;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code bin/sendcap}: the one entry point, with a subcommand per job. */
@Command(
    name = "sendcap",
    mixinStandardHelpOptions = true,
    version = "sendcap 0.1.0",
    description = "Per-user frequency caps for campaign sends, on Kafka Streams and Redis.",
    subcommands = {
      DemoCommand.class,
      EmbeddedCommand.class,
      RunCommand.class,
      SegmentsCommand.class,
      PoliciesCommand.class,
      ProduceCommand.class,
      ConsumeCommand.class,
      ReportCommand.class,
      BenchCommand.class
    })
public final class Main {
  private Main() {}

  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    System.exit(commandLine().execute(args));
  }

  /** The command line, with errors a user can fix printed as one message rather than a trace. */
  public static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Main());
    cli.setExecutionExceptionHandler(
        (e, commandLine, parseResult) -> {
          PrintWriter err = commandLine.getErr();
          if (e instanceof InvalidConfigException invalid) {
            err.println("sendcap: invalid configuration:");
            invalid.problems().forEach(p -> err.println("  " + p));
          } else if (e instanceof SendcapApp.StartupException
              || e instanceof SegmentFiles.SegmentFileException
              || e instanceof SegmentTopic.SegmentTopicException
              || e instanceof IllegalArgumentException) {
            err.println("sendcap: " + e.getMessage());
          } else {
            throw e;
          }
          return 2;
        });
    return cli;
  }
}
