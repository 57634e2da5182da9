package io.sendcap.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Redis server running as a child process of this JVM: {@code redis-server} from the PATH, bound
 * to a free port of 127.0.0.1, without persistence, in a temporary directory.
 *
 * <p>{@link #stop()} and {@link #restart()} keep the port, for Redis outage tests. The process is
 * also killed when the JVM exits, so that an interrupted demo leaves no server behind.
 */
public final class EmbeddedRedis implements AutoCloseable {
  /** How long {@link #start()} and {@link #restart()} wait for the server to answer PING. */
  public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(10);

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRedis.class);
  private static final String BINARY = "redis-server";
  private static final String LOG_FILE = "redis.log";
  private static final String OUTPUT_FILE = "redis.out";
  private static final String CONFIG_FILE = "redis.conf";
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration POLL_INTERVAL = Duration.ofMillis(20);
  private static final int LOG_TAIL_LINES = 20;

  private final Path executable;
  private final int port;
  private final List<String> extraArgs;
  private final List<String> configLines;
  private final Path dir;
  private final boolean keptDir;
  private final Thread killOnExit;
  private volatile Process process;

  /** Prepares, without starting it, a server on {@code port} with extra command-line options. */
  EmbeddedRedis(int port, List<String> extraArgs) {
    this(RedisBinary.locate(), port, extraArgs);
  }

  /** Prepares a server run by the given {@code redis-server} executable. */
  EmbeddedRedis(Path executable, int port, List<String> extraArgs) {
    this(executable, port, extraArgs, null, List.of());
  }

  /**
   * Prepares a server on {@code port} started with a configuration file of {@code configLines}
   * written into its directory, as a Sentinel needs (it rewrites the file with what it learns).
   */
  EmbeddedRedis(int port, List<String> configLines, List<String> extraArgs) {
    this(RedisBinary.locate(), port, extraArgs, null, configLines);
  }

  /**
   * Prepares a server whose data lives in {@code dataDir}, kept at {@link #close()}: an append-only
   * file, so that every write survives a restart; {@code null} for a temporary directory without
   * persistence, deleted at {@link #close()}.
   */
  private EmbeddedRedis(
      Path executable, int port, List<String> extraArgs, Path dataDir, List<String> configLines) {
    this.executable = executable;
    this.configLines = List.copyOf(configLines);
    this.port = port;
    this.keptDir = dataDir != null;
    this.extraArgs =
        keptDir
            ? concat(extraArgs, List.of("--appendonly", "yes", "--appendfsync", "everysec"))
            : List.copyOf(extraArgs);
    this.dir = keptDir ? TempDirs.kept(dataDir) : TempDirs.create("sendcap-redis-" + port + "-");
    this.killOnExit = new Thread(this::onExit, "kill-redis-server-" + port);
    Runtime.getRuntime().addShutdownHook(killOnExit);
  }

  /**
   * Starts a Redis server on a free port and returns once it answers PING.
   *
   * @throws IllegalStateException if {@code redis-server} is not on the PATH, exits, or does not
   *     answer within {@link #STARTUP_TIMEOUT}
   */
  public static EmbeddedRedis start() {
    return launched(new EmbeddedRedis(FreePorts.pick(), List.of()));
  }

  /**
   * Starts a Redis server on {@code port} of 127.0.0.1 (0: a free one), its data in {@code dataDir}
   * and kept there ({@code null}: a temporary directory, no persistence).
   *
   * @throws IllegalArgumentException if {@code port} is in use
   */
  public static EmbeddedRedis start(int port, Path dataDir) {
    int chosen = FreePorts.orFree(port, "--redis-port");
    return launched(new EmbeddedRedis(RedisBinary.locate(), chosen, List.of(), dataDir, List.of()));
  }

  /**
   * Starts a Redis server on a free port with more {@code redis-server} options, such as a TLS port
   * and ACL users for a test of a secured Redis; {@link #uri()} stays the plain port, which answers
   * the harness's PING.
   */
  public static EmbeddedRedis startWith(List<String> options) {
    return launched(new EmbeddedRedis(FreePorts.pick(), options));
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> all = new ArrayList<>(a);
    all.addAll(b);
    return List.copyOf(all);
  }

  /** Launches a prepared server, closing it if it does not come up. */
  static EmbeddedRedis launched(EmbeddedRedis redis) {
    try {
      redis.launch();
    } catch (RuntimeException e) {
      redis.close();
      throw e;
    }
    return redis;
  }

  /** Returns the URI that Redis clients connect to, e.g. {@code redis://127.0.0.1:40123}. */
  public String uri() {
    return "redis://127.0.0.1:" + port;
  }

  /** Returns the port the server listens on, the same across restarts. */
  public int port() {
    return port;
  }

  /** Returns whether the server process is alive. */
  public boolean isRunning() {
    Process current = process;
    return current != null && current.isAlive();
  }

  /**
   * Stops the server with SIGTERM (no data is saved) and waits for it to exit; does nothing if it
   * is already stopped.
   */
  public synchronized void stop() {
    Process current = process;
    if (current == null) {
      return;
    }
    LOG.info("Stopping Redis at {}", uri());
    current.destroy();
    awaitExit(current);
    process = null;
  }

  /**
   * Stops the server as a persistent Redis stops: it saves its data first, and {@link #restart()}
   * loads it again. ({@link #stop()} loses the data, as Redis without persistence does.)
   */
  public synchronized void stopKeepingData() {
    Process current = process;
    if (current == null) {
      return;
    }
    LOG.info("Stopping Redis at {}, saving its data", uri());
    try {
      Resp.call(port, "SHUTDOWN", "SAVE");
    } catch (IOException e) {
      LOG.debug("Redis on port {} closed the connection while shutting down", port, e);
    }
    awaitExit(current);
    process = null;
  }

  /** Stops the server if it runs, starts it again on the same port and waits for PING. */
  public synchronized void restart() {
    stop();
    launch();
  }

  /** Stops the server and deletes its directory, unless it is a data directory to keep. */
  @Override
  public synchronized void close() {
    try {
      stop();
    } finally {
      removeShutdownHook();
      if (!keptDir) {
        TempDirs.delete(dir);
      }
    }
  }

  /**
   * The CPU time the server has used since it started, user and system ({@code INFO cpu}).
   *
   * @throws IllegalStateException if the server does not answer
   */
  public double cpuSeconds() {
    try {
      double seconds = 0;
      for (String line : call("INFO", "cpu").split("\r\n")) {
        if (line.startsWith("used_cpu_user:") || line.startsWith("used_cpu_sys:")) {
          seconds += Double.parseDouble(line.substring(line.indexOf(':') + 1));
        }
      }
      return seconds;
    } catch (IOException e) {
      throw new IllegalStateException("Redis at " + uri() + " did not answer INFO cpu", e);
    }
  }

  /** Sends one command to this server and returns its reply as text. */
  public String call(String... command) throws IOException {
    return Resp.call(port, command);
  }

  private synchronized void launch() {
    List<String> command = new ArrayList<>(List.of(executable.toString()));
    if (!configLines.isEmpty()) {
      command.add(writeConfigFile().toString());
    }
    command.addAll(List.of("--port", "" + port));
    command.addAll(List.of("--bind", "127.0.0.1", "--save", "", "--appendonly", "no"));
    command.addAll(List.of("--dir", dir.toString(), "--logfile", dir.resolve(LOG_FILE).toString()));
    command.addAll(extraArgs);
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve(OUTPUT_FILE).toFile());
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not run " + executable, e);
    }
    awaitPing();
    LOG.info("Redis accepts clients at {}", uri());
  }

  /** Writes the configuration file at the first start; a restart keeps what Redis rewrote. */
  private Path writeConfigFile() {
    Path file = dir.resolve(CONFIG_FILE);
    try {
      if (!Files.exists(file)) {
        Files.write(file, configLines);
      }
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("Could not write " + file, e);
    }
  }

  private void awaitPing() {
    Instant deadline = Instant.now().plus(STARTUP_TIMEOUT);
    IOException lastFailure = null;
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "redis-server on port "
                + port
                + " exited with code "
                + process.exitValue()
                + logTail());
      }
      try {
        if ("PONG".equals(call("PING"))) {
          return;
        }
      } catch (IOException e) {
        lastFailure = e;
      }
      pause();
    }
    kill();
    throw new IllegalStateException(
        "redis-server on port "
            + port
            + " did not answer PING within "
            + STARTUP_TIMEOUT
            + logTail(),
        lastFailure);
  }

  private void awaitExit(Process current) {
    try {
      if (!current.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("redis-server on port {} ignored SIGTERM for {}; killing it", port, STOP_TIMEOUT);
        current.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      current.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while stopping redis-server on port " + port, e);
    }
  }

  /**
   * What the JVM's exit does to a server still running: a server whose data is kept is stopped as
   * on {@link #close()}, so that it writes what it holds; any other is killed.
   */
  private void onExit() {
    if (keptDir) {
      stop();
    } else {
      kill();
    }
  }

  /**
   * Kills the server with SIGKILL and waits for it to be gone, as a crashed machine stops: no
   * shutdown, nothing saved. {@link #restart()} starts it again.
   */
  public synchronized void killNow() {
    Process current = process;
    if (current != null) {
      current.destroyForcibly();
      try {
        current.waitFor();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(
            "Interrupted while killing redis-server on port " + port, e);
      }
    }
  }

  private void kill() {
    Process current = process;
    if (current != null) {
      current.destroyForcibly();
    }
  }

  private void removeShutdownHook() {
    try {
      Runtime.getRuntime().removeShutdownHook(killOnExit);
    } catch (IllegalStateException e) {
      LOG.debug("JVM is shutting down; its hook kills redis-server on port {}", port);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(POLL_INTERVAL.toMillis());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while waiting for redis-server", e);
    }
  }

  private String logTail() {
    List<String> lines = new ArrayList<>();
    for (Path file : List.of(dir.resolve(OUTPUT_FILE), dir.resolve(LOG_FILE))) {
      try {
        if (Files.exists(file)) {
          lines.addAll(Files.readAllLines(file));
        }
      } catch (IOException e) {
        lines.add("(could not read " + file + ": " + e.getMessage() + ")");
      }
    }
    List<String> tail = lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size());
    return tail.isEmpty() ? "" : "; its output ends with:\n" + String.join("\n", tail);
  }

  /**
   * Closes every server of {@code servers}, even if closing one fails; then throws the first
   * failure, the others suppressed in it.
   */
  static void closeAll(List<EmbeddedRedis> servers) {
    RuntimeException failure = null;
    for (EmbeddedRedis server : servers) {
      try {
        server.close();
      } catch (RuntimeException e) {
        if (failure == null) {
          failure = e;
        } else {
          failure.addSuppressed(e);
        }
      }
    }
    if (failure != null) {
      throw failure;
    }
  }
}
