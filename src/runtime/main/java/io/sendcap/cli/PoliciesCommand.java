package io.sendcap.cli;

import io.sendcap.app.PolicyTopic;
import io.sendcap.app.SendcapTopics;
import io.sendcap.config.Cap;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.segment.SegmentTopic;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code sendcap policies}: checks a policy file, publishes it to the policies topic that every
 * instance reads (each switches to it without a restart), and shows the version in force.
 */
@Command(
    name = "policies",
    mixinStandardHelpOptions = true,
    description = "Checks, publishes and shows the policies (the caps of each segment).",
    subcommands = {
      PoliciesCommand.Validate.class,
      PoliciesCommand.Publish.class,
      PoliciesCommand.Show.class
    })
final class PoliciesCommand {
  private PoliciesCommand() {}

  @Command(
      name = "validate",
      mixinStandardHelpOptions = true,
      description =
          "Checks a policy file and prints what it says; every problem is reported at once."
              + " Needs no broker.")
  static final class Validate implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Parameters(paramLabel = "FILE", description = "The policy file (YAML).")
    Path file;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      Optional<Policies> policies = parse(file, spec.commandLine().getErr());
      if (policies.isEmpty()) {
        return 1;
      }
      out.println(file + ": valid");
      describe(policies.get(), out);
      return 0;
    }
  }

  @Command(
      name = "publish",
      mixinStandardHelpOptions = true,
      description =
          "Checks a policy file and that every segment it names is on the segments topic, then"
              + " publishes it to the policies topic; every running instance decides the sends"
              + " that follow by it, without a restart.")
  static final class Publish implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin ConfigOptions options;

    @Parameters(paramLabel = "FILE", description = "The policy file (YAML).")
    Path file;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      SendcapConfig config = options.load();
      Optional<Policies> policies = parse(file, err);
      if (policies.isEmpty()) {
        return 1;
      }
      String segmentsTopic = config.topics().segments();
      boolean noSegments =
          !SendcapTopics.missing(config, List.of(segmentsTopic), config.brokerTimeout()).isEmpty();
      Map<String, Long> published =
          noSegments
              ? Map.of()
              : new SegmentTopic(
                      SendcapTopics.clientProperties(config), segmentsTopic, config.brokerTimeout())
                  .publishedVersions();
      List<String> missing =
          policies.get().segmentNames().stream().filter(s -> !published.containsKey(s)).toList();
      if (!missing.isEmpty()) {
        err.println(
            "sendcap: "
                + file
                + " names segment(s) "
                + missing
                + " that are not on topic "
                + segmentsTopic
                + "; publish them first (bin/sendcap segments publish), nothing was published");
        return 1;
      }
      String yaml;
      try {
        yaml = Files.readString(file);
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot read " + file + ": " + e.getMessage(), e);
      }
      long version = new PolicyTopic(config, config.brokerTimeout()).publish(yaml, file.toString());
      out.printf(
          "published %s as version %d on topic %s; running instances switch to it as it"
              + " arrives%n",
          file, version, config.topics().policies());
      describe(policies.get(), out);
      return 0;
    }
  }

  @Command(
      name = "show",
      mixinStandardHelpOptions = true,
      description = "Prints the policies in force: the newest published version, or the file's.")
  static final class Show implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Mixin ConfigOptions options;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      SendcapConfig config = options.load();
      PolicyTopic topic = new PolicyTopic(config, config.brokerTimeout());
      Optional<PolicyTopic.Published> latest =
          SendcapTopics.missing(config, List.of(config.topics().policies()), config.brokerTimeout())
                  .isEmpty()
              ? topic.latest()
              : Optional.empty();
      if (latest.isEmpty()) {
        out.printf(
            "no version published on topic %s; instances use policies.file (%s)%n",
            config.topics().policies(), config.policiesFile());
        out.print(read(config.policiesFile()));
        return 0;
      }
      PolicyTopic.Published p = latest.get();
      out.printf(
          "version %d on topic %s, published %s from %s%n",
          p.version(), config.topics().policies(), p.publishedAt(), p.source());
      out.print(p.yaml());
      return 0;
    }
  }

  /** The policies of {@code file}, or empty after printing its problems to {@code err}. */
  private static Optional<Policies> parse(Path file, PrintWriter err) {
    try {
      return Optional.of(Policies.load(file));
    } catch (InvalidConfigException e) {
      err.println("sendcap: " + file + " is invalid:");
      e.problems().forEach(p -> err.println("  " + p));
      return Optional.empty();
    }
  }

  private static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + file + ": " + e.getMessage(), e);
    }
  }

  /**
   * One line per policy, in priority order: its caps and minimum interval; then one line per global
   * cap.
   */
  private static void describe(Policies policies, PrintWriter out) {
    int rank = 1;
    for (Policy p : policies.segments()) {
      out.printf("  %d. %-12s %s%n", rank++, p.segment(), rules(p));
    }
    out.printf("     %-12s %s%n", Policy.DEFAULT, rules(policies.defaultPolicy()));
    if (!policies.global().isEmpty()) {
      out.println("  global caps, across users:");
      int width = policies.global().stream().mapToInt(g -> g.name().length()).max().orElse(0);
      for (GlobalCap g : policies.global()) {
        out.printf("     %-" + Math.max(12, width) + "s %s%n", g.name(), global(g));
      }
    }
  }

  private static String global(GlobalCap g) {
    String scope =
        switch (g.per()) {
          case ALL -> "";
          case CAMPAIGN -> " for each campaign";
          case CHANNEL -> " for each channel";
        };
    return g.limit()
        + " per "
        + g.windowName()
        + scope
        + (g.channel() == null ? "" : ", " + g.channel() + " only")
        + (g.campaign() == null ? "" : ", campaign " + g.campaign() + " only")
        + " (reserved in batches of up to "
        + g.maxBatch()
        + ")";
  }

  private static String rules(Policy p) {
    String caps = p.caps().stream().map(PoliciesCommand::cap).collect(Collectors.joining(", "));
    String interval =
        p.minInterval().isZero()
            ? ""
            : ", min-interval " + p.minInterval().toString().substring(2).toLowerCase(Locale.ROOT);
    return caps + interval + (ZoneOffset.UTC.equals(p.zone()) ? "" : ", zone " + p.zone());
  }

  private static String cap(Cap c) {
    return c.limit()
        + " per "
        + c.name()
        + (c.channel() == null ? "" : " (" + c.channel() + ")")
        + (c.countsTheLog() ? "" : " " + c.algorithm().key());
  }
}
