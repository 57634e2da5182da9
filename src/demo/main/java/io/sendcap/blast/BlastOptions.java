package io.sendcap.blast;

import java.nio.file.Path;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/**
 * The options of a generated campaign blast, shared by {@code demo} and {@code bench pipeline}:
 * {@code --sends}, {@code --users}, {@code --partitions}, {@code --seed} and {@code --policies}.
 */
public final class BlastOptions {
  @Option(names = "--sends", description = "Sends in the blast (default: ${DEFAULT-VALUE}).")
  int sends = 1_000_000;

  @Option(names = "--users", description = "Users the sends go to (default: ${DEFAULT-VALUE}).")
  int users = 200_000;

  @Option(
      names = "--partitions",
      description = "Partitions of each topic (default: ${DEFAULT-VALUE}).")
  int partitions = 4;

  @Option(names = "--seed", description = "Random seed of the blast (default: ${DEFAULT-VALUE}).")
  long seed = 42;

  @Option(
      names = "--policies",
      description = "Policy file (default: config/policies.yaml under the sendcap directory).")
  Path policies = Path.of(System.getProperty("sendcap.home", "."), "config", "policies.yaml");

  /**
   * Checks the values.
   *
   * @throws ParameterException naming the options if a count is not positive
   */
  public void validate(CommandSpec spec) {
    if (sends < 1 || users < 1 || partitions < 1) {
      throw new ParameterException(
          spec.commandLine(), "--sends, --users and --partitions must be positive");
    }
  }

  /** The sends in the blast. */
  public int sends() {
    return sends;
  }

  /** The users the sends go to. */
  public int users() {
    return users;
  }

  /** The partitions of each topic. */
  public int partitions() {
    return partitions;
  }

  /** The random seed of the blast. */
  public long seed() {
    return seed;
  }

  /** The policy file. */
  public Path policies() {
    return policies;
  }
}
