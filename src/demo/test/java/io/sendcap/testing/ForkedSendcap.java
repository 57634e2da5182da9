package io.sendcap.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code sendcap run} in a JVM of its own, for tests that kill the application: started from the
 * test's classpath, its output written to a log file.
 */
public final class ForkedSendcap implements AutoCloseable {
  /** The line {@code run} logs once it processes sends. */
  public static final String STARTED = "sendcap started";

  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(90);

  private final Process process;
  private final Path log;

  private ForkedSendcap(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  /**
   * Starts {@code sendcap run --config CONFIG} with the given {@code --set} overrides and returns
   * once it has logged {@link #STARTED}.
   *
   * @throws AssertionError if it exits or has not started within {@code timeout}; with its log
   */
  public static ForkedSendcap start(Path config, Path log, Duration timeout, String... sets) {
    List<String> args = new ArrayList<>(List.of("run", "--config", config.toString()));
    for (String set : sets) {
      args.add("--set");
      args.add(set);
    }
    return start(args, log, timeout, STARTED);
  }

  /**
   * Starts {@code sendcap ARGS} in a JVM of its own, as {@code bin/sendcap} does, its standard
   * output and error both written to {@code log}, and returns once the log holds {@code ready}.
   *
   * @throws AssertionError if it exits or has not logged {@code ready} within {@code timeout}; with
   *     its log
   */
  public static ForkedSendcap start(List<String> args, Path log, Duration timeout, String ready) {
    ForkedSendcap forked = launch(args, log);
    TopicReader.await(
        "a forked sendcap to log \"" + ready + "\"",
        timeout,
        () -> forked.logged(ready) || !forked.process.isAlive());
    if (!forked.process.isAlive()) {
      throw new AssertionError("the forked sendcap exited:\n" + forked.output());
    }
    return forked;
  }

  /**
   * Runs {@code sendcap ARGS} in a JVM of its own, as {@code bin/sendcap} does, to its end, its
   * standard output and error both written to {@code log}.
   *
   * @throws AssertionError if it is still running after {@code timeout}; with its log
   */
  public static ForkedSendcap run(List<String> args, Path log, Duration timeout)
      throws InterruptedException {
    ForkedSendcap forked = launch(args, log);
    forked.awaitExit(timeout);
    return forked;
  }

  private static ForkedSendcap launch(List<String> args, Path log) {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.add("-Xmx512m");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add("io.sendcap.cli.Main");
    command.addAll(args);
    try {
      Process process =
          new ProcessBuilder(command)
              .redirectErrorStream(true)
              .redirectOutput(log.toFile())
              .start();
      return new ForkedSendcap(process, log);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Whether the log holds {@code text}. */
  public boolean logged(String text) {
    return output().contains(text);
  }

  /** What the process has written so far. */
  public String output() {
    try {
      return Files.readString(log, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Waits for the process to end on its own and returns its exit code.
   *
   * @throws AssertionError if it is still running after {@code timeout}; with its log
   */
  public int awaitExit(Duration timeout) throws InterruptedException {
    if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      throw new AssertionError("the forked sendcap is still running:\n" + output());
    }
    return process.exitValue();
  }

  /** The process's exit code; it must have ended. */
  public int exitValue() {
    return process.exitValue();
  }

  /** Kills the process with SIGKILL, as a crash or an OOM killer would, and waits for its end. */
  public void kill() throws InterruptedException {
    process.destroyForcibly().waitFor();
  }

  /** Stops the process with SIGTERM and waits for it to shut down cleanly. */
  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
      throw new AssertionError("the forked sendcap did not stop on SIGTERM:\n" + output());
    }
  }
}
