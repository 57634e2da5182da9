package io.sendcap.cli;

import io.sendcap.config.Installation;
import io.sendcap.config.InvalidConfigException;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/** The {@code --config} and {@code --set} options of the commands that talk to Kafka or Redis. */
final class ConfigOptions {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      defaultValue = "config/sendcap.properties",
      converter = InstalledPath.class,
      description =
          "The configuration file (default: ${DEFAULT-VALUE}, in the current directory or else"
              + " in sendcap's installation).")
  Path config;

  /** A relative path that is not in the current directory is looked up in the installation. */
  static final class InstalledPath implements CommandLine.ITypeConverter<Path> {
    @Override
    public Path convert(String value) {
      return Installation.resolve(Path.of(value));
    }
  }

  @Option(
      names = "--set",
      paramLabel = "KEY=VALUE",
      description = "Overrides a key of the configuration file; repeatable.")
  Map<String, String> overrides = new LinkedHashMap<>();

  /** The validated configuration. */
  SendcapConfig load() {
    return SendcapConfig.load(config, overrides);
  }

  /**
   * The validated configuration, its policy file checked too: every problem of both is reported at
   * once, each line naming its file.
   *
   * @throws InvalidConfigException listing the problems of both files
   */
  SendcapConfig loadWithPolicies() {
    List<String> problems = new ArrayList<>();
    SendcapConfig settings = null;
    Path policies;
    try {
      settings = load();
      policies = settings.policiesFile();
    } catch (InvalidConfigException e) {
      // A problem of a --set value says so itself; the others are the file's.
      e.problems().forEach(p -> problems.add(p.startsWith("--set ") ? p : config + ": " + p));
      policies = Installation.resolve(Path.of(rawPoliciesFile()));
    }
    try {
      Policies.load(policies);
    } catch (InvalidConfigException e) {
      for (String problem : e.problems()) {
        problems.add(policies + ": " + problem);
      }
    }
    if (!problems.isEmpty()) {
      throw new InvalidConfigException(config.toString(), problems);
    }
    return settings;
  }

  /** {@code policies.file} as written, for a configuration that does not validate. */
  private String rawPoliciesFile() {
    String key = "policies.file";
    if (overrides.containsKey(key)) {
      return overrides.get(key);
    }
    Properties props = new Properties();
    try (var reader = Files.newBufferedReader(config)) {
      props.load(reader);
    } catch (IOException e) {
      // the configuration's own problems say so
    }
    return props.getProperty(key, "config/policies.yaml").trim();
  }
}
