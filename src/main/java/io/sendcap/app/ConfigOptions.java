package io.sendcap.app;

import io.sendcap.config.SendcapConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import picocli.CommandLine.Option;

/** The {@code --config} and {@code --set} options of the commands that talk to Kafka or Redis. */
final class ConfigOptions {
  @Option(
      names = "--config",
      paramLabel = "FILE",
      defaultValue = "config/sendcap.properties",
      description = "The configuration file (default: ${DEFAULT-VALUE}).")
  Path config;

  @Option(
      names = "--set",
      paramLabel = "KEY=VALUE",
      description = "Overrides a key of the configuration file; repeatable.")
  Map<String, String> overrides = new LinkedHashMap<>();

  /** The validated configuration. */
  SendcapConfig load() {
    return SendcapConfig.load(config, overrides);
  }
}
