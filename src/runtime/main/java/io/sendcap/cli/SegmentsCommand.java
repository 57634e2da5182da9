package io.sendcap.cli;

import io.sendcap.app.SendcapTopics;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.segment.RoaringSegmentIndex;
import io.sendcap.segment.SegmentFiles;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code sendcap segments}: build, publish and inspect the segments every instance loads. */
@Command(
    name = "segments",
    mixinStandardHelpOptions = true,
    description = "Builds, publishes and inspects segments (roaring bitmaps of user ids).",
    subcommands = {
      SegmentsCommand.Build.class,
      SegmentsCommand.Publish.class,
      SegmentsCommand.ListSegments.class,
      SegmentsCommand.Lookup.class,
      SegmentsCommand.Check.class
    })
final class SegmentsCommand {
  private SegmentsCommand() {}

  /** Where a segment's users come from: a file of ids or a portable roaring bitmap. */
  static final class Source {
    @Option(
        names = "--ids",
        paramLabel = "FILE",
        required = true,
        description = "One decimal user id per line; no header, no blank lines.")
    Path ids;

    @Option(
        names = "--bitmap",
        paramLabel = "FILE",
        required = true,
        description = "A roaring bitmap in the portable format (32-bit or its 64-bit extension).")
    Path bitmap;

    UserIds read() {
      UserIds users = ids != null ? SegmentFiles.readIds(ids) : SegmentFiles.readBitmap(bitmap);
      users.optimize();
      return users;
    }
  }

  @Command(
      name = "build",
      mixinStandardHelpOptions = true,
      description = "Builds a segment's bitmap file (portable roaring format) from a file of ids.")
  static final class Build implements Callable<Integer> {
    @Spec CommandSpec spec;

    @Option(names = "--name", required = true, description = "The segment's name.")
    String name;

    @ArgGroup(multiplicity = "1")
    Source source;

    @Option(
        names = "--out",
        paramLabel = "FILE",
        description = "Where to write the bitmap (default: NAME.roaring).")
    Path out;

    @Override
    public Integer call() throws IOException {
      SegmentRecords.requireName(name);
      UserIds users = source.read();
      Path file = out != null ? out : Path.of(name + ".roaring");
      try (OutputStream o = Files.newOutputStream(file)) {
        users.writePortable(o);
      }
      spec.commandLine()
          .getOut()
          .printf(
              "%s: %,d users, %,d bytes -> %s%n",
              name, users.cardinality(), Files.size(file), file);
      return 0;
    }
  }

  @Command(
      name = "publish",
      mixinStandardHelpOptions = true,
      description =
          "Publishes a segment as its next version to the compacted segments topic, in chunks"
              + " that pass a broker's default message size limit.")
  static final class Publish implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ConfigOptions options;

    @Option(names = "--name", required = true, description = "The segment's name.")
    String name;

    @ArgGroup(multiplicity = "1")
    Source source;

    @Option(
        names = "--chunk-bytes",
        description = "Bytes per record (default: ${DEFAULT-VALUE}; 1024 to 900000).")
    int chunkBytes = SegmentTopic.DEFAULT_CHUNK_BYTES;

    @Override
    public Integer call() {
      if (chunkBytes < 1024 || chunkBytes > 900_000) {
        throw new ParameterException(
            spec.commandLine(),
            "--chunk-bytes: "
                + chunkBytes
                + " is outside 1024 to 900000 (the broker's default limit is 1 MiB a record)");
      }
      SegmentRecords.requireName(name);
      SendcapConfig config = options.load();
      UserIds users = source.read();
      PrintWriter out = spec.commandLine().getOut();
      SegmentRecords.Manifest m =
          topic(config).publish(name, users, chunkBytes, new java.io.PrintStream(System.err, true));
      out.printf(
          "%s v%d: %,d users, %,d bytes, %d chunks%n",
          name, m.version(), m.cardinality(), m.bytes(), m.chunks());
      return 0;
    }
  }

  @Command(
      name = "list",
      mixinStandardHelpOptions = true,
      description = "Lists the segments on the topic: name, version, users, bytes.")
  static final class ListSegments implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ConfigOptions options;

    @Override
    public Integer call() {
      OnTopic onTopic = OnTopic.read(options);
      Policies policies = onTopic.policies();
      SegmentRegistry registry = onTopic.registry();
      PrintWriter out = spec.commandLine().getOut();
      out.printf(
          "%-20s %8s %14s %14s  %-24s %s%n",
          "SEGMENT", "VERSION", "USERS", "BYTES", "PUBLISHED", "POLICY");
      registry
          .loaded()
          .forEach(
              (name, l) ->
                  out.printf(
                      "%-20s %8d %,14d %,14d  %-24s %s%n",
                      name,
                      l.manifest().version(),
                      l.manifest().cardinality(),
                      l.manifest().bytes(),
                      Instant.ofEpochMilli(l.manifest().publishedAt()),
                      priority(policies, name)));
      List<String> missing = registry.missing(policies.segmentNames());
      missing.forEach(
          name ->
              out.printf(
                  "%-20s %8s %14s %14s  %-24s %s%n",
                  name, "-", "-", "-", "MISSING", priority(policies, name)));
      return missing.isEmpty() ? 0 : 1;
    }
  }

  @Command(
      name = "lookup",
      mixinStandardHelpOptions = true,
      description = "Shows which segment a user belongs to, and why.")
  static final class Lookup implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ConfigOptions options;

    @Parameters(paramLabel = "USERID", description = "The user id.")
    long userId;

    @Override
    public Integer call() {
      if (userId < 0) {
        // As the pipeline judges a send to such a user: it goes to the dead-letter topic.
        throw new ParameterException(
            spec.commandLine(),
            "USERID "
                + userId
                + " is negative: user ids are 0 or more, and the pipeline sends a send to a"
                + " negative one to the dead-letter topic");
      }
      OnTopic onTopic = OnTopic.read(options);
      Policies policies = onTopic.policies();
      SegmentRegistry registry = onTopic.registry();
      PrintWriter out = spec.commandLine().getOut();
      String winner = registry.segmentOf(userId);
      for (String name : policies.segmentNames()) {
        SegmentRegistry.Loaded l = registry.loaded().get(name);
        String state =
            l == null
                ? "not published"
                : l.ids().contains(userId) ? "contains the user" : "does not contain the user";
        out.printf(
            "  %s %-20s v%-6s %s%n",
            name.equals(winner) ? "*" : " ", name, l == null ? "-" : l.manifest().version(), state);
      }
      registry
          .loaded()
          .forEach(
              (name, l) -> {
                if (!policies.segmentNames().contains(name) && l.ids().contains(userId)) {
                  out.printf(
                      "    %-20s v%-6s contains the user, but no policy names it%n",
                      name, l.manifest().version());
                }
              });
      out.println(
          winner == null
              ? "user " + userId + ": in no segment of the policy file -> the default policy"
              : "user "
                  + userId
                  + ": segment "
                  + winner
                  + " (the first, in the policy file's order, that contains the user)");
      return 0;
    }
  }

  @Command(
      name = "check",
      mixinStandardHelpOptions = true,
      description =
          "Reports users in more than one segment (the first in the policy file's order wins)"
              + " and segments the policies name that are not published.")
  static final class Check implements Callable<Integer> {
    @Spec CommandSpec spec;
    @Mixin ConfigOptions options;

    @Override
    public Integer call() {
      OnTopic onTopic = OnTopic.read(options);
      Policies policies = onTopic.policies();
      SegmentRegistry registry = onTopic.registry();
      PrintWriter out = spec.commandLine().getOut();
      Map<String, UserIds> ordered = new LinkedHashMap<>();
      for (String name : policies.segmentNames()) {
        if (registry.loaded().containsKey(name)) {
          ordered.put(name, registry.loaded().get(name).ids());
        }
      }
      registry.loaded().forEach((name, l) -> ordered.putIfAbsent(name, l.ids()));
      List<RoaringSegmentIndex.Overlap> overlaps = new RoaringSegmentIndex(ordered).overlaps();
      for (RoaringSegmentIndex.Overlap o : overlaps) {
        out.printf(
            "overlap: %,d users in both %s and %s; they get %s's policy%n",
            o.users(), o.winner(), o.other(), o.winner());
      }
      List<String> missing = registry.missing(policies.segmentNames());
      for (String name : missing) {
        out.printf("missing: %s is named by the policy file but not published%n", name);
      }
      out.printf(
          "%d segments, %d overlaps, %d missing%n",
          registry.loaded().size(), overlaps.size(), missing.size());
      return missing.isEmpty() ? 0 : 1;
    }
  }

  /** The policy file and the segments on the topic, read as an instance would at start-up. */
  private record OnTopic(Policies policies, SegmentRegistry registry) {
    static OnTopic read(ConfigOptions options) {
      SendcapConfig config = options.load();
      Policies policies = Policies.load(config.policiesFile());
      return new OnTopic(policies, topic(config).read(policies.segmentNames()).registry());
    }
  }

  private static String priority(Policies policies, String name) {
    int i = policies.segmentNames().indexOf(name);
    return i < 0 ? "(no policy names it)" : "priority " + (i + 1);
  }

  private static SegmentTopic topic(SendcapConfig config) {
    return new SegmentTopic(
        SendcapTopics.clientProperties(config), config.topics().segments(), config.brokerTimeout());
  }
}
