package io.sendcap.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Schema Registry running as a child process of this JVM: Apicurio Registry, whose
 * Confluent-compatible API is what Confluent's serializers and sendcap's Confluent framing talk to,
 * bound to a free port of 127.0.0.1.
 *
 * <p>The build unpacks Apicurio's distribution from Maven Central ({@code
 * io.apicurio:apicurio-registry-app:tar.gz:all}) into {@code target/demo/apicurio-registry}, beside
 * {@code sendcap-demo.jar} and {@code target/demo/classes}; it is on no classpath. A new registry
 * refuses incompatible schemas as Confluent's does by default ({@link #DEFAULT_COMPATIBILITY}). It
 * keeps its schemas in an H2 database in its temporary directory, so that {@link #stop()} and
 * {@link #restart()} keep the port, the schemas and their ids, for registry outage tests; {@link
 * #close()} deletes them. The process is also killed when the JVM exits, so that an interrupted
 * demo leaves no server behind.
 */
public final class EmbeddedRegistry implements AutoCloseable {
  /** How long {@link #start()} and {@link #restart()} wait for the registry to answer. */
  public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);

  /** The path of the Confluent-compatible API (version 7) on the registry's HTTP port. */
  public static final String CCOMPAT_PATH = "/apis/ccompat/v7";

  /**
   * The global compatibility level a new registry starts with: BACKWARD, Confluent Schema
   * Registry's default (Apicurio's own is NONE), so that a writer schema that readers of the
   * previous version cannot read is refused at registration, as it would be there.
   */
  public static final String DEFAULT_COMPATIBILITY = "BACKWARD";

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRegistry.class);
  private static final String DISTRIBUTION_DIR = "apicurio-registry";
  private static final String BUILD_SETTINGS = "schema-registry.properties";
  private static final String LOG_FILE = "registry.log";
  private static final String DATABASE = "db/registry";
  private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

  /**
   * The JVM options of the registry: a small heap, and the client compiler and serial collector,
   * which roughly halve its start-up on two shared cores, at little cost for a test registry's
   * load.
   */
  private static final List<String> JVM_OPTIONS =
      List.of("-Xms32m", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

  /**
   * The variables of this process's environment the registry inherits; the others are dropped, as
   * Apicurio and Quarkus read settings from variables such as {@code KAFKA_BOOTSTRAP_SERVERS} or
   * {@code REGISTRY_DATASOURCE_URL}.
   */
  private static final Set<String> INHERITED_ENVIRONMENT =
      Set.of("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR");

  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration POLL_INTERVAL = Duration.ofMillis(100);
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
  private static final int LOG_TAIL_LINES = 20;

  private final Path runnerJar;
  private final int port;
  private final Path dir;
  private final boolean keptDir;
  private final Thread killOnExit;
  private final HttpClient http;
  private volatile Process process;

  /** Prepares, without starting it, a registry run from {@code runnerJar} on {@code port}. */
  EmbeddedRegistry(Path runnerJar, int port) {
    this(runnerJar, port, null);
  }

  /**
   * Prepares a registry whose schemas live in {@code dataDir}, kept at {@link #close()} ({@code
   * null}: a temporary directory, deleted then).
   */
  private EmbeddedRegistry(Path runnerJar, int port, Path dataDir) {
    this.runnerJar = runnerJar;
    this.port = port;
    this.keptDir = dataDir != null;
    this.dir = keptDir ? TempDirs.kept(dataDir) : TempDirs.create("sendcap-registry-" + port + "-");
    this.http =
        HttpClient.newBuilder()
            .proxy(HttpClient.Builder.NO_PROXY)
            .connectTimeout(REQUEST_TIMEOUT)
            .build();
    this.killOnExit = new Thread(this::onExit, "kill-schema-registry-" + port);
    Runtime.getRuntime().addShutdownHook(killOnExit);
  }

  /**
   * Starts a registry on a free port and returns once its Confluent-compatible API answers.
   *
   * @throws IllegalStateException if the build has not unpacked the registry, or it exits or does
   *     not answer within {@link #STARTUP_TIMEOUT} (the message ends with the tail of its log)
   */
  public static EmbeddedRegistry start() {
    return launched(new EmbeddedRegistry(runnerJar(), FreePorts.pick()));
  }

  /**
   * Starts a registry on {@code port} of 127.0.0.1 (0: a free one), its schemas in {@code dataDir}
   * and kept there ({@code null}: a temporary directory).
   *
   * @throws IllegalArgumentException if {@code port} is in use
   */
  public static EmbeddedRegistry start(int port, Path dataDir) {
    int chosen = FreePorts.orFree(port, "--registry-port");
    return launched(new EmbeddedRegistry(runnerJar(), chosen, dataDir));
  }

  /** As {@link #start(int, Path)}, on another thread; see {@link #startInBackground()}. */
  public static Starting startInBackground(int port, Path dataDir) {
    return new Starting(CompletableFuture.supplyAsync(() -> start(port, dataDir)));
  }

  /**
   * Starts a registry on another thread, for a caller that starts other servers meanwhile: it is a
   * child process that takes a few seconds to answer.
   */
  public static Starting startInBackground() {
    return new Starting(CompletableFuture.supplyAsync(EmbeddedRegistry::start));
  }

  /** A registry being started by {@link #startInBackground()}. */
  public static final class Starting {
    private final CompletableFuture<EmbeddedRegistry> future;

    private Starting(CompletableFuture<EmbeddedRegistry> future) {
      this.future = future;
    }

    /**
     * Waits for the registry and returns it.
     *
     * @throws IllegalStateException as {@link #start()} does
     */
    public EmbeddedRegistry await() {
      try {
        return future.join();
      } catch (CompletionException e) {
        if (e.getCause() instanceof RuntimeException cause) {
          throw cause;
        }
        throw e;
      }
    }

    /** Closes the registry once it is up, for a caller that will not use it after all. */
    public void discard() {
      try {
        future.join().close();
      } catch (CompletionException e) {
        // It did not start: there is nothing to close.
      }
    }
  }

  /**
   * Launches a prepared registry and sets its global compatibility to BACKWARD, closing it if it
   * does not come up.
   */
  static EmbeddedRegistry launched(EmbeddedRegistry registry) {
    try {
      registry.launch();
      registry.setGlobalCompatibility(DEFAULT_COMPATIBILITY);
    } catch (RuntimeException e) {
      registry.close();
      throw e;
    }
    return registry;
  }

  /**
   * Returns the base URL of the registry's Confluent-compatible API, e.g. {@code
   * http://127.0.0.1:40123/apis/ccompat/v7}: the value of a Confluent client's {@code
   * schema.registry.url}.
   */
  public String url() {
    return "http://127.0.0.1:" + port + CCOMPAT_PATH;
  }

  /** Returns the port the registry listens on, the same across restarts. */
  public int port() {
    return port;
  }

  /** Returns the file the registry writes its log to, kept until {@link #close()}. */
  public Path logFile() {
    return dir.resolve(LOG_FILE);
  }

  /** Returns whether the registry process is alive. */
  public boolean isRunning() {
    Process current = process;
    return current != null && current.isAlive();
  }

  /** Returns the process id of the registry, or -1 if it is stopped. */
  long pid() {
    Process current = process;
    return current == null ? -1 : current.pid();
  }

  /**
   * Stops the registry with SIGTERM and waits for it to exit (killing it after 10 s); its schemas
   * are kept for {@link #restart()}. Does nothing if it is already stopped.
   */
  public synchronized void stop() {
    Process current = process;
    if (current == null) {
      return;
    }
    LOG.info("Stopping the Schema Registry at {} (pid {})", url(), current.pid());
    current.destroy();
    awaitExit(current);
    process = null;
  }

  /**
   * Stops the registry if it runs, starts it again on the same port with the same schemas and
   * returns once it answers.
   */
  public synchronized void restart() {
    stop();
    launch();
  }

  /** Stops the registry and deletes its directory: its log and its schemas. */
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
   * Returns the runner jar of the unpacked distribution, in {@code apicurio-registry} beside the
   * directory or jar this class was loaded from ({@code target/demo/classes} or {@code
   * target/demo/sendcap-demo.jar}).
   */
  static Path runnerJar() {
    String version = buildSettings().getProperty("version");
    Path distribution = codeLocation().getParent().resolve(DISTRIBUTION_DIR);
    Path jar = distribution.resolve("apicurio-registry-app-" + version + "-runner.jar");
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(
          "The Schema Registry (Apicurio Registry "
              + version
              + ") is not unpacked: "
              + jar
              + " is missing. `mvn package` (which bin/sendcap runs) unpacks it there from"
              + " io.apicurio:apicurio-registry-app:"
              + version
              + ":tar.gz:all on Maven Central");
    }
    return jar;
  }

  private static Properties buildSettings() {
    Properties settings = new Properties();
    try (InputStream in = EmbeddedRegistry.class.getResourceAsStream(BUILD_SETTINGS)) {
      if (in == null) {
        throw new IllegalStateException(
            BUILD_SETTINGS + " is not on the classpath; build sendcap with Maven");
      }
      settings.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not read " + BUILD_SETTINGS, e);
    }
    return settings;
  }

  private static Path codeLocation() {
    try {
      return Path.of(
              EmbeddedRegistry.class.getProtectionDomain().getCodeSource().getLocation().toURI())
          .toAbsolutePath();
    } catch (URISyntaxException e) {
      throw new IllegalStateException("Cannot tell where sendcap's classes were loaded from", e);
    }
  }

  private synchronized void launch() {
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    List<String> command = new ArrayList<>(List.of(java.toString()));
    command.addAll(JVM_OPTIONS);
    command.add("-Dquarkus.http.host=127.0.0.1");
    command.add("-Dquarkus.http.port=" + port);
    command.add("-Dquarkus.banner.enabled=false");
    command.add("-Dquarkus.datasource.jdbc.url=jdbc:h2:file:" + dir.resolve(DATABASE));
    command.addAll(List.of("-jar", runnerJar.toString()));
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()));
    Map<String, String> environment = builder.environment();
    environment.keySet().retainAll(INHERITED_ENVIRONMENT);
    Instant started = Instant.now();
    try {
      process = builder.start();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not run " + java, e);
    }
    awaitAnswer();
    LOG.info(
        "Schema Registry (Apicurio, pid {}) accepts clients at {} after {} ms (log in {})",
        process.pid(),
        url(),
        Duration.between(started, Instant.now()).toMillis(),
        logFile());
  }

  private void awaitAnswer() {
    Instant deadline = Instant.now().plus(STARTUP_TIMEOUT);
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url() + "/subjects"))
            .timeout(REQUEST_TIMEOUT)
            .GET()
            .build();
    Exception lastFailure = null;
    while (Instant.now().isBefore(deadline)) {
      if (!process.isAlive()) {
        throw new IllegalStateException(
            "The Schema Registry on port "
                + port
                + " exited with code "
                + process.exitValue()
                + logTail());
      }
      try {
        HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
        if (response.statusCode() == 200) {
          return;
        }
        lastFailure = new IOException("HTTP " + response.statusCode() + " from " + request.uri());
      } catch (IOException e) {
        lastFailure = e;
      } catch (InterruptedException e) {
        interrupted(e);
      }
      try {
        Thread.sleep(POLL_INTERVAL.toMillis());
      } catch (InterruptedException e) {
        interrupted(e);
      }
    }
    kill();
    throw new IllegalStateException(
        "The Schema Registry on port "
            + port
            + " did not answer GET "
            + request.uri()
            + " within "
            + STARTUP_TIMEOUT
            + logTail(),
        lastFailure);
  }

  private void setGlobalCompatibility(String level) {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url() + "/config"))
            .timeout(REQUEST_TIMEOUT)
            .header("Content-Type", CONTENT_TYPE)
            .PUT(HttpRequest.BodyPublishers.ofString("{\"compatibility\":\"" + level + "\"}"))
            .build();
    try {
      HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() != 200) {
        throw new IllegalStateException(
            "The Schema Registry at "
                + url()
                + " refused compatibility "
                + level
                + ": HTTP "
                + response.statusCode()
                + " "
                + response.body());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Could not set the Schema Registry's compatibility", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while configuring the Schema Registry", e);
    }
  }

  private void awaitExit(Process current) {
    try {
      if (!current.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn(
            "The Schema Registry (pid {}) ignored SIGTERM for {}; killing it",
            current.pid(),
            STOP_TIMEOUT);
        current.destroyForcibly().waitFor();
      }
    } catch (InterruptedException e) {
      current.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "Interrupted while stopping the Schema Registry (pid " + current.pid() + ")", e);
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
      LOG.debug("JVM is shutting down; its hook kills the Schema Registry on port {}", port);
    }
  }

  private void interrupted(InterruptedException e) {
    kill();
    Thread.currentThread().interrupt();
    throw new IllegalStateException("Interrupted while waiting for the Schema Registry", e);
  }

  private String logTail() {
    List<String> lines;
    try {
      lines = Files.exists(logFile()) ? Files.readAllLines(logFile()) : List.of();
    } catch (IOException e) {
      lines = List.of("(could not read " + logFile() + ": " + e.getMessage() + ")");
    }
    List<String> tail = lines.subList(Math.max(0, lines.size() - LOG_TAIL_LINES), lines.size());
    return tail.isEmpty() ? "" : "; its log ends with:\n" + String.join("\n", tail);
  }
}
