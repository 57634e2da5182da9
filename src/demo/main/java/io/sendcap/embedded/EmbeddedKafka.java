package io.sendcap.embedded;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A single-node Kafka cluster running in this JVM: one KRaft server that is both broker and
 * controller, listening on free ports of 127.0.0.1.
 *
 * <p>It is built from the broker of {@code kafka_2.13}, not from Kafka's test kit, so that {@code
 * demo} can use it at run time. Internal topics have one replica, so transactions (exactly-once)
 * work. Record timestamps and retention are a production broker's defaults: records stamped more
 * than an hour ahead are refused ({@code log.message.timestamp.after.max.ms}) and those older than
 * seven days deleted ({@code log.retention.hours}), so what works here works on a real cluster.
 * {@link #stop()} and {@link #restart()} keep the ports and the data, for broker-restart fault
 * tests.
 */
public final class EmbeddedKafka implements AutoCloseable {
  /** How long {@link #start(Path)} and {@link #restart()} wait for the broker to accept clients. */
  public static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(60);

  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedKafka.class);
  private static final int NODE_ID = 1;
  private static final String CONTROLLER_LISTENER = "CONTROLLER";
  private static final Duration POLL_INTERVAL = Duration.ofMillis(50);

  /** The SASL mechanism of a secured broker. */
  public static final String SCRAM = "SCRAM-SHA-512";

  /**
   * A broker whose clients' listener requires TLS and SCRAM-SHA-512 and whose authorizer denies
   * what no ACL allows.
   *
   * @param certificates the broker's key store, and the trust store its clients need
   * @param users the SCRAM users (name to password) the storage is formatted with
   */
  public record Security(Certificates certificates, Map<String, String> users) {}

  private final Path dataDir;
  private final boolean deleteOnClose;
  private final int brokerPort;
  private final int controllerPort;
  private final int internalPort;
  private final Security security;
  private KafkaRaftServer server;

  private EmbeddedKafka(Path dataDir, boolean deleteOnClose, int brokerPort, Security security) {
    this.dataDir = dataDir.toAbsolutePath();
    this.deleteOnClose = deleteOnClose;
    this.brokerPort = brokerPort;
    this.controllerPort = FreePorts.pick();
    this.security = security;
    this.internalPort = security == null ? 0 : FreePorts.pick();
  }

  /**
   * Formats the storage if needed, starts the broker and returns once it accepts clients.
   *
   * @param dataDir the directory of the logs and metadata, reused if already formatted; {@code
   *     null} for a temporary directory that {@link #close()} deletes
   * @throws IllegalStateException if the broker does not accept clients within {@link
   *     #STARTUP_TIMEOUT}
   */
  public static EmbeddedKafka start(Path dataDir) {
    return start(dataDir, 0);
  }

  /**
   * As {@link #start(Path)}, the broker listening on {@code port} of 127.0.0.1 (0: a free one).
   *
   * @throws IllegalArgumentException if {@code port} is in use
   */
  public static EmbeddedKafka start(Path dataDir, int port) {
    return start(dataDir, port, null);
  }

  /**
   * As {@link #start(Path, int)}, secured: the clients' listener on {@code port} speaks SASL_SSL
   * (SCRAM-SHA-512) and the StandardAuthorizer allows only what ACLs grant ({@code
   * allow.everyone.if.no.acl.found=false}). Inter-broker and controller traffic and {@link
   * #adminBootstrapServers()} use plaintext listeners on other loopback ports whose anonymous
   * principal is a super user: for this broker's own administration (topics, ACLs), not for clients
   * under test.
   */
  public static EmbeddedKafka start(Path dataDir, int port, Security security) {
    int brokerPort = FreePorts.orFree(port, "--kafka-port");
    EmbeddedKafka kafka =
        dataDir == null
            ? new EmbeddedKafka(TempDirs.create("sendcap-kafka-"), true, brokerPort, security)
            : new EmbeddedKafka(dataDir, false, brokerPort, security);
    try {
      kafka.formatIfNeeded();
      kafka.startServer();
    } catch (RuntimeException e) {
      kafka.close();
      throw e;
    }
    return kafka;
  }

  /** Returns the {@code bootstrap.servers} of this broker, e.g. {@code 127.0.0.1:40123}. */
  public String bootstrapServers() {
    return "127.0.0.1:" + brokerPort;
  }

  /**
   * The bootstrap servers of a client with every right: {@link #bootstrapServers()}, or on a
   * secured broker its internal plaintext listener, for creating topics and ACLs.
   */
  public String adminBootstrapServers() {
    return security == null ? bootstrapServers() : "127.0.0.1:" + internalPort;
  }

  /** Returns the directory that holds this broker's logs and metadata. */
  public Path dataDir() {
    return dataDir;
  }

  /** Stops the broker, keeping its ports and data; does nothing if it is already stopped. */
  public synchronized void stop() {
    if (server == null) {
      return;
    }
    LOG.info("Stopping Kafka at {}", bootstrapServers());
    server.shutdown();
    server.awaitShutdown();
    server = null;
  }

  /**
   * Stops the broker if it runs, starts it again on the same ports with the same data, and returns
   * once it accepts clients.
   */
  public synchronized void restart() {
    stop();
    startServer();
  }

  /** Stops the broker and deletes its data directory if it was a temporary one. */
  @Override
  public synchronized void close() {
    try {
      stop();
    } finally {
      if (deleteOnClose) {
        TempDirs.delete(dataDir);
      }
    }
  }

  private void formatIfNeeded() {
    if (Files.exists(dataDir.resolve("meta.properties"))) {
      LOG.info("Reusing formatted Kafka storage in {}", dataDir);
      return;
    }
    Path configFile = null;
    try {
      Files.createDirectories(dataDir);
      configFile = writeConfig();
      format(configFile);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not prepare Kafka storage in " + dataDir, e);
    } finally {
      if (configFile != null) {
        TempDirs.delete(configFile);
      }
    }
  }

  /**
   * Formats the storage in this JVM with {@code kafka-storage format}, which builds and runs
   * Kafka's {@code Formatter} from the configuration (static voter, latest production metadata
   * version).
   */
  private void format(Path configFile) {
    List<String> args =
        new ArrayList<>(
            List.of(
                "format",
                "--config",
                configFile.toString(),
                "--cluster-id",
                Uuid.randomUuid().toString()));
    if (security != null) {
      security
          .users()
          .forEach(
              (user, password) ->
                  args.addAll(
                      List.of(
                          "--add-scram",
                          SCRAM + "=[name=" + user + ",password=" + password + "]")));
    }
    ByteArrayOutputStream output = new ByteArrayOutputStream();
    int exitCode;
    try (PrintStream printStream = new PrintStream(output, true, StandardCharsets.UTF_8)) {
      exitCode = StorageTool.execute(args.toArray(String[]::new), printStream);
    } catch (RuntimeException e) {
      throw new IllegalStateException("Could not format Kafka storage in " + dataDir, e);
    }
    String printed = output.toString(StandardCharsets.UTF_8).strip();
    if (exitCode != 0) {
      throw new IllegalStateException(
          "Could not format Kafka storage in "
              + dataDir
              + " (exit code "
              + exitCode
              + "): "
              + printed);
    }
    LOG.debug("Formatted Kafka storage: {}", printed);
  }

  private Path writeConfig() throws IOException {
    Properties properties = new Properties();
    properties.putAll(config());
    Path file = Files.createTempFile("sendcap-kafka-", ".properties");
    try (Writer writer = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      properties.store(writer, "sendcap embedded Kafka, for formatting only");
    }
    return file;
  }

  private void startServer() {
    KafkaRaftServer started = new KafkaRaftServer(new KafkaConfig(config()), Time.SYSTEM);
    server = started;
    try {
      started.startup();
      awaitClients();
    } catch (RuntimeException e) {
      stop();
      throw e;
    }
    LOG.info("Kafka accepts clients at {} (data in {})", bootstrapServers(), dataDir);
  }

  private Map<String, String> config() {
    return security == null ? plainConfig() : securedConfig();
  }

  private Map<String, String> securedConfig() {
    Map<String, String> config = new HashMap<>(plainConfig());
    config.put(
        "listeners",
        "SASL_SSL://127.0.0.1:"
            + brokerPort
            + ",INTERNAL://127.0.0.1:"
            + internalPort
            + ",CONTROLLER://127.0.0.1:"
            + controllerPort);
    config.put(
        "advertised.listeners",
        "SASL_SSL://127.0.0.1:" + brokerPort + ",INTERNAL://127.0.0.1:" + internalPort);
    config.put(
        "listener.security.protocol.map",
        "SASL_SSL:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT");
    config.put("inter.broker.listener.name", "INTERNAL");
    config.put("sasl.enabled.mechanisms", SCRAM);
    config.put(
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required;");
    config.put("ssl.keystore.type", "PKCS12");
    config.put("ssl.keystore.location", security.certificates().keystore().toString());
    config.put("ssl.keystore.password", security.certificates().password());
    config.put("ssl.key.password", security.certificates().password());
    config.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
    config.put("allow.everyone.if.no.acl.found", "false");
    config.put("super.users", "User:ANONYMOUS");
    return config;
  }

  private Map<String, String> plainConfig() {
    String listeners =
        "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort;
    return Map.ofEntries(
        Map.entry("process.roles", "broker,controller"),
        Map.entry("node.id", Integer.toString(NODE_ID)),
        Map.entry("controller.quorum.voters", NODE_ID + "@127.0.0.1:" + controllerPort),
        Map.entry("listeners", listeners),
        Map.entry("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort),
        Map.entry("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"),
        Map.entry("controller.listener.names", CONTROLLER_LISTENER),
        Map.entry("inter.broker.listener.name", "PLAINTEXT"),
        Map.entry("log.dirs", dataDir.toString()),
        Map.entry("metadata.log.dir", dataDir.toString()),
        Map.entry("offsets.topic.replication.factor", "1"),
        Map.entry("offsets.topic.num.partitions", "1"),
        Map.entry("transaction.state.log.replication.factor", "1"),
        Map.entry("transaction.state.log.min.isr", "1"),
        Map.entry("transaction.state.log.num.partitions", "1"),
        Map.entry("share.coordinator.state.topic.replication.factor", "1"),
        Map.entry("share.coordinator.state.topic.min.isr", "1"),
        Map.entry("group.initial.rebalance.delay.ms", "0"),
        Map.entry("num.partitions", "1"),
        Map.entry("auto.create.topics.enable", "false"),
        // The log cleaner allocates this buffer up front; Kafka's default is 128 MiB.
        Map.entry("log.cleaner.dedupe.buffer.size", "2097152"));
  }

  private void awaitClients() {
    Instant deadline = Instant.now().plus(STARTUP_TIMEOUT);
    Map<String, Object> adminConfig =
        Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, adminBootstrapServers());
    try (Admin admin = Admin.create(adminConfig)) {
      while (describeCluster(admin, deadline).isEmpty()) {
        Thread.sleep(POLL_INTERVAL.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("Interrupted while waiting for Kafka to start", e);
    }
  }

  private Collection<Node> describeCluster(Admin admin, Instant deadline)
      throws InterruptedException {
    long remaining = Duration.between(Instant.now(), deadline).toMillis();
    if (remaining <= 0) {
      throw notReady(null);
    }
    DescribeClusterOptions options = new DescribeClusterOptions().timeoutMs((int) remaining);
    try {
      return admin.describeCluster(options).nodes().get(remaining, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw notReady(e);
    }
  }

  private IllegalStateException notReady(Exception cause) {
    return new IllegalStateException(
        "Kafka at "
            + bootstrapServers()
            + " did not accept clients within "
            + STARTUP_TIMEOUT.toSeconds()
            + "s; see the log of kafka.server.* above",
        cause);
  }
}
