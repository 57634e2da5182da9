package io.sendcap.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import io.sendcap.app.KafkaErrors;
import io.sendcap.app.SendcapApp;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.segment.SegmentFiles;
import io.sendcap.segment.SegmentTopic;
import java.io.PrintWriter;
import java.util.List;
import java.util.ServiceLoader;
import java.util.Set;
import org.slf4j.LoggerFactory;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.ScopeType;

/**
 * {@code bin/sendcap}: the one entry point, with a subcommand per job.
 *
 * <p>The runtime's commands are its own; {@code demo}, {@code embedded} and {@code bench} come from
 * the demo module when its jar is on the classpath (as with {@code bin/sendcap}, not in the
 * container image), found as {@link MoreCommands} services.
 */
@Command(
    name = "sendcap",
    mixinStandardHelpOptions = true,
    version = "sendcap 0.1.0",
    description = "Per-user frequency caps for campaign sends, on Kafka Streams and Redis.",
    subcommands = {
      RunCommand.class,
      SegmentsCommand.class,
      PoliciesCommand.class,
      ProduceCommand.class,
      ConsumeCommand.class,
      ReportCommand.class
    })
public final class Main {
  /** The commands whose Kafka client and internal logs are off unless {@code --verbose}. */
  private static final Set<String> TOOLS =
      Set.of("produce", "consume", "report", "policies", "segments");

  /** sendcap's own logback configuration for JSON lines (SENDCAP_LOG_FORMAT=json). */
  private static final String JSON_LOGS = "logback-json.xml";

  @Option(
      names = "--verbose",
      scope = ScopeType.INHERIT,
      description =
          "Log what the Kafka clients and sendcap do at INFO; the tools (produce, consume, report,"
              + " policies, segments) print only their own output and errors without it.")
  boolean verbose;

  private Main() {}

  /** Runs the command line and exits with its code. */
  public static void main(String[] args) {
    System.exit(execute(commandLine(), args));
  }

  /**
   * Runs {@code cli} with {@code args} and returns its exit code, with everything the command
   * printed flushed: picocli's writers flush on {@code println} only, and what a command wrote with
   * {@code print} would otherwise be lost when the process exits.
   */
  public static int execute(CommandLine cli, String[] args) {
    try {
      return cli.execute(args);
    } finally {
      cli.getOut().flush();
      cli.getErr().flush();
    }
  }

  /** The command line, with errors a user can fix printed as one message rather than a trace. */
  public static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new Main());
    for (MoreCommands more : ServiceLoader.load(MoreCommands.class)) {
      more.commands().forEach(cli::addSubcommand);
    }
    cli.setExecutionStrategy(
        parseResult -> {
          logLevels(parseResult);
          return new CommandLine.RunLast().execute(parseResult);
        });
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
          } else if (KafkaErrors.refusal(e) != null) {
            // a secured cluster's refusal met while the command ran, as reading a topic without
            // READ
            err.println("sendcap: " + KafkaErrors.refusal(e));
          } else {
            throw e;
          }
          return 2;
        });
    return cli;
  }

  /**
   * Sets the log levels for the command being run: a tool prints its own lines only, as its one
   * line for an unreachable broker, not the Kafka client's warnings before it; {@code --verbose}
   * logs everything at INFO. A logback configuration of the user's own ({@code
   * -Dlogback.configurationFile}) is left as it is.
   */
  private static void logLevels(ParseResult parseResult) {
    String configuration = System.getProperty("logback.configurationFile");
    if (configuration != null && !configuration.equals(JSON_LOGS)
        || !(LoggerFactory.getILoggerFactory() instanceof LoggerContext logback)) {
      return;
    }
    boolean verbose = false;
    for (ParseResult p = parseResult; p != null; p = p.subcommand()) {
      verbose |= p.hasMatchedOption("--verbose");
    }
    ParseResult command = parseResult.subcommand();
    if (verbose) {
      ch.qos.logback.classic.Logger root = logback.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
      logback.getLoggerList().stream().filter(l -> l != root).forEach(l -> l.setLevel(null));
      root.setLevel(Level.INFO);
    } else if (command != null && TOOLS.contains(command.commandSpec().name())) {
      for (String library : List.of("org.apache.kafka", "kafka", "io.lettuce", "io.netty")) {
        logback.getLogger(library).setLevel(Level.OFF);
      }
      logback.getLogger("io.sendcap").setLevel(Level.WARN);
    }
  }
}
