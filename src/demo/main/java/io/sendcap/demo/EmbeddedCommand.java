package io.sendcap.demo;

import io.sendcap.blast.KafkaTopics;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sendcap embedded}: a Kafka broker, Redis and a Schema Registry for local development,
 * until stopped.
 */
@Command(
    name = "embedded",
    mixinStandardHelpOptions = true,
    description =
        "Starts an embedded Kafka broker (KRaft) with sendcap's default topics, Redis and a"
            + " Schema Registry (Apicurio, Confluent-compatible API) and prints their addresses;"
            + " runs until stopped (Ctrl-C).")
final class EmbeddedCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--partitions",
      description = "Partitions of each topic (default: ${DEFAULT-VALUE}).")
  int partitions = 4;

  @Option(
      names = "--no-schema-registry",
      description =
          "Leaves out the Schema Registry, a child JVM of about 150 MB that takes a few seconds"
              + " to start.")
  boolean noSchemaRegistry;

  @Option(
      names = "--kafka-port",
      paramLabel = "PORT",
      description = "The broker's port on 127.0.0.1 (default: a free one).")
  int kafkaPort;

  @Option(
      names = "--redis-port",
      paramLabel = "PORT",
      description = "Redis's port on 127.0.0.1 (default: a free one).")
  int redisPort;

  @Option(
      names = "--registry-port",
      paramLabel = "PORT",
      description = "The Schema Registry's port on 127.0.0.1 (default: a free one).")
  int registryPort;

  @Option(
      names = "--data-dir",
      paramLabel = "DIR",
      description =
          "Keeps the broker's topics (DIR/kafka), Redis's keys (DIR/redis) and the registry's"
              + " schemas (DIR/registry) there, so that a start with the same options finds them"
              + " again (default: temporary directories, deleted at the end).")
  Path dataDir;

  @Override
  public Integer call() throws InterruptedException {
    // The registry is a child process: it starts while this JVM starts Redis and the broker.
    EmbeddedRegistry.Starting registryStarting =
        noSchemaRegistry ? null : EmbeddedRegistry.startInBackground(registryPort, in("registry"));
    EmbeddedRedis redis;
    EmbeddedKafka kafka;
    try {
      redis = EmbeddedRedis.start(redisPort, in("redis"));
    } catch (RuntimeException e) {
      if (registryStarting != null) {
        registryStarting.discard();
      }
      throw e;
    }
    try {
      kafka = EmbeddedKafka.start(in("kafka"), kafkaPort);
    } catch (RuntimeException e) {
      redis.close();
      if (registryStarting != null) {
        registryStarting.discard();
      }
      throw e;
    }
    EmbeddedRegistry registry;
    try {
      registry = registryStarting == null ? null : registryStarting.await();
    } catch (RuntimeException e) {
      kafka.close();
      redis.close();
      throw e;
    }
    SendcapConfig.Topics t = SendcapConfig.from(new Properties(), "defaults").topics();
    KafkaTopics.create(
        kafka.bootstrapServers(),
        partitions,
        List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  kafka.close();
                  redis.close();
                  if (registry != null) {
                    registry.close();
                  }
                  stopped.countDown();
                },
                "embedded-shutdown"));
    PrintWriter out = spec.commandLine().getOut();
    out.println("bootstrap.servers=" + kafka.bootstrapServers());
    out.println("cap.redis.uri=" + redis.uri());
    if (registry != null) {
      out.println("schema.registry.url=" + registry.url());
    }
    out.println(
        "topics: " + String.join(", ", t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
    out.println("Publish the segments the policies name, once, with:");
    out.printf(
        "  for s in new-users active dormant; do bin/sendcap segments publish --set"
            + " bootstrap.servers=%s --name $s --ids config/segments/$s.ids; done%n",
        kafka.bootstrapServers());
    out.println("Run sendcap against them with:");
    out.printf(
        "  bin/sendcap run --config config/sendcap.properties --set bootstrap.servers=%s"
            + " --set cap.redis.uri=%s%n",
        kafka.bootstrapServers(), redis.uri());
    out.println("Start again with the same addresses" + (dataDir == null ? "" : " and data") + ":");
    out.printf(
        "  bin/sendcap embedded --kafka-port %d --redis-port %d%s%s%s%n",
        port(kafka.bootstrapServers()),
        port(redis.uri()),
        registry == null ? " --no-schema-registry" : " --registry-port " + registry.port(),
        dataDir == null ? "" : " --data-dir " + dataDir.toAbsolutePath(),
        partitions == 4 ? "" : " --partitions " + partitions);
    out.println("Press Ctrl-C to stop.");
    out.flush();
    stopped.await();
    return 0;
  }

  /** The directory of one server's data under --data-dir, or null for a temporary one. */
  private Path in(String server) {
    return dataDir == null ? null : dataDir.resolve(server);
  }

  private static int port(String address) {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
  }
}
