package io.sendcap.testing;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The Docker engine and images of the container tests. The images are docker/build's: local
 * stand-ins of the official Kafka, Redis and Apicurio images (no image registry is reachable from
 * the build machines) and sendcap's image of the runtime the build has just packaged, built once
 * per test JVM, or found current.
 *
 * <p>Where no Docker engine answers, a test that needs one is skipped with the reason printed: the
 * build machines run one because .ci/run starts it.
 */
public final class Docker {
  private static final Path LOGS = Path.of("target", "docker");
  private static final Duration BUILD_TIMEOUT = Duration.ofMinutes(20);
  private static Images images;

  private Docker() {}

  /**
   * The images, as the variables docker-compose.yml takes ({@code KAFKA_IMAGE}, {@code
   * REDIS_IMAGE}, {@code REGISTRY_IMAGE}, {@code SENDCAP_IMAGE}).
   */
  public record Images(Map<String, String> variables) {
    public String kafka() {
      return variables.get("KAFKA_IMAGE");
    }

    public String redis() {
      return variables.get("REDIS_IMAGE");
    }

    public String sendcap() {
      return variables.get("SENDCAP_IMAGE");
    }
  }

  /** What a command printed, standard output and error together, and its exit code. */
  public record Result(int exit, String output) {}

  /**
   * Skips the calling test, printing why, unless a Docker engine answers; then builds the images
   * with docker/build (each at most once per JVM) and returns them.
   *
   * @throws AssertionError if docker/build fails, with the end of its log
   */
  public static synchronized Images images() {
    String missing = engineProblem();
    if (missing != null) {
      String reason = "skipped: " + missing + " (.ci/run installs and starts one)";
      System.out.println(reason);
      Assumptions.abort(reason);
    }
    if (images == null) {
      Result build = run(BUILD_TIMEOUT, Map.of(), log("docker-build"), "docker/build");
      assertThat(build.exit()).as("docker/build failed:\n%s", tail(build.output())).isZero();
      Map<String, String> variables = new LinkedHashMap<>();
      for (String line :
          run(Duration.ofMinutes(1), Map.of(), null, "docker/build", "--names")
              .output()
              .split("\n")) {
        int eq = line.indexOf('=');
        if (eq > 0) {
          variables.put(line.substring(0, eq), line.substring(eq + 1).trim());
        }
      }
      images = new Images(Map.copyOf(variables));
    }
    return images;
  }

  /** Why no Docker engine can be used, or null if one answers. */
  private static String engineProblem() {
    try {
      Result info =
          run(Duration.ofSeconds(30), Map.of(), null, "docker", "info", "-f", "{{.ServerVersion}}");
      return info.exit() == 0
          ? null
          : "no Docker engine answers (docker info: " + firstLine(info.output()) + ")";
    } catch (UncheckedIOException e) {
      return "no docker command (" + e.getCause().getMessage() + ")";
    }
  }

  /**
   * The docker-compose command: Compose v1's {@code docker-compose} (Debian's package), else the
   * {@code docker compose} plugin; skips the calling test, printing why, if there is neither.
   */
  public static List<String> compose() {
    for (List<String> command : List.of(List.of("docker-compose"), List.of("docker", "compose"))) {
      List<String> version = new ArrayList<>(command);
      version.add("version");
      try {
        if (run(Duration.ofSeconds(30), Map.of(), null, version.toArray(String[]::new)).exit()
            == 0) {
          return command;
        }
      } catch (UncheckedIOException absent) {
        // the next one
      }
    }
    String reason = "skipped: neither docker-compose nor docker compose runs here";
    System.out.println(reason);
    Assumptions.abort(reason);
    throw new AssertionError("unreachable");
  }

  /** A log file for a command under target/docker. */
  public static Path log(String name) {
    try {
      Files.createDirectories(LOGS);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return LOGS.resolve(name + ".log");
  }

  /**
   * Runs a command in the repository's directory with {@code env} added to the environment, its
   * output written to {@code log} (or a temporary file if null), and waits for its end.
   *
   * @throws AssertionError if it runs past {@code timeout} (it is then killed)
   * @throws UncheckedIOException if it cannot be started
   */
  public static Result run(Duration timeout, Map<String, String> env, Path log, String... command) {
    try {
      Path out = log != null ? log : Files.createTempFile("sendcap-docker", ".log");
      ProcessBuilder builder =
          new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile());
      builder.environment().putAll(env);
      Process process = builder.start();
      boolean ended = process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
      if (!ended) {
        process.destroyForcibly().waitFor();
      }
      String output = Files.readString(out, StandardCharsets.UTF_8);
      if (log == null) {
        Files.delete(out);
      }
      if (!ended) {
        throw new AssertionError(
            String.join(" ", command) + " ran past " + timeout + ":\n" + tail(output));
      }
      return new Result(process.exitValue(), output);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + command[0], e);
    }
  }

  /** The last 60 lines of a command's output. */
  public static String tail(String output) {
    List<String> lines = output.lines().toList();
    return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
  }

  private static String firstLine(String output) {
    return output
        .lines()
        .map(String::trim)
        .filter(l -> !l.isEmpty())
        .findFirst()
        .orElse("no output");
  }
}
