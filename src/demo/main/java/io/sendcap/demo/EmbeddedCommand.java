package io.sendcap.demo;

import io.sendcap.blast.KafkaTopics;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import io.sendcap.embedded.FreePorts;
import io.sendcap.embedded.SecuredSetup;
import io.sendcap.embedded.TempDirs;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
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

  @Option(
      names = "--secure",
      description =
          "Secures the broker and Redis as a production cluster is: Kafka's listener speaks"
              + " SASL_SSL (SCRAM-SHA-512) with ACLs (principal sendcap with README's least"
              + " rights, principal operator with every right on the topics, for the tools), Redis"
              + " speaks TLS with sendcap's ACL user; the certificate, the passwords and a"
              + " settings file for each principal are made for the run and deleted at the end."
              + " Not with --data-dir.")
  boolean secure;

  @Override
  public Integer call() throws InterruptedException {
    if (secure && dataDir != null) {
      throw new CommandLine.ParameterException(
          spec.commandLine(),
          "--secure makes its certificate and passwords for one run; it keeps no data"
              + " (--data-dir)");
    }
    Path secureDir = secure ? TempDirs.create("sendcap-secure-") : null;
    try {
      return serve(secureDir);
    } catch (RuntimeException e) {
      if (secureDir != null) {
        TempDirs.delete(secureDir); // the shutdown hook that deletes it is not registered yet
      }
      throw e;
    }
  }

  /** Starts the servers, prints how to reach them and serves until the JVM is stopped. */
  private int serve(Path secureDir) throws InterruptedException {
    SecuredSetup secured = secure ? SecuredSetup.create(secureDir) : null;
    int redisTlsPort = secure ? FreePorts.orFree(redisPort, "--redis-port") : 0;
    // The registry is a child process: it starts while this JVM starts Redis and the broker.
    EmbeddedRegistry.Starting registryStarting =
        noSchemaRegistry ? null : EmbeddedRegistry.startInBackground(registryPort, in("registry"));
    EmbeddedRedis redis;
    EmbeddedKafka kafka;
    try {
      redis =
          secure
              ? EmbeddedRedis.startWith(secured.redisOptions(redisTlsPort))
              : EmbeddedRedis.start(redisPort, in("redis"));
    } catch (RuntimeException e) {
      if (registryStarting != null) {
        registryStarting.discard();
      }
      throw e;
    }
    try {
      kafka = EmbeddedKafka.start(in("kafka"), kafkaPort, secure ? secured.kafkaSecurity() : null);
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
    if (secure) {
      secured.grant(kafka);
      secured.grant(redis);
    }
    KafkaTopics.create(
        kafka.adminBootstrapServers(),
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
                  if (secureDir != null) {
                    TempDirs.delete(secureDir);
                  }
                  stopped.countDown();
                },
                "embedded-shutdown"));
    PrintWriter out = spec.commandLine().getOut();
    if (secure) {
      printSecured(out, secured, kafka, redisTlsPort, registry, t);
      stopped.await();
      return 0;
    }
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

  private static void printSecured(
      PrintWriter out,
      SecuredSetup secured,
      EmbeddedKafka kafka,
      int redisTlsPort,
      EmbeddedRegistry registry,
      SendcapConfig.Topics t) {
    Path sendcap =
        secured.write(
            "sendcap.properties", secured.sendcapSettings(kafka.bootstrapServers(), redisTlsPort));
    Path operator =
        secured.write(
            "operator.properties",
            secured.kafkaSettings(
                kafka.bootstrapServers(), SecuredSetup.OPERATOR, secured.operatorPassword()));
    out.println(
        "bootstrap.servers="
            + kafka.bootstrapServers()
            + " (SASL_SSL, SCRAM-SHA-512, ACLs: allow.everyone.if.no.acl.found=false)");
    out.println(
        "cap.redis.uri=rediss://"
            + SecuredSetup.SENDCAP
            + ":[hidden]@127.0.0.1:"
            + redisTlsPort
            + " (TLS, ACL user "
            + SecuredSetup.SENDCAP
            + ")");
    if (registry != null) {
      out.println("schema.registry.url=" + registry.url());
    }
    out.println(
        "topics: "
            + String.join(", ", t.input(), t.deliveries(), t.suppressed(), t.deadLetters())
            + ", "
            + t.policies());
    out.println("sendcap's settings (README's least rights): " + sendcap);
    out.println("the tools' settings (principal operator): " + operator);
    out.println("Publish the segments the policies name, once, with:");
    out.printf(
        "  for s in new-users active dormant; do bin/sendcap segments publish --config %s --name"
            + " $s --ids config/segments/$s.ids; done%n",
        operator);
    out.println("Run sendcap against them with:");
    out.printf("  bin/sendcap run --config %s%n", sendcap);
    out.println("Press Ctrl-C to stop.");
    out.flush();
  }

  /** The directory of one server's data under --data-dir, or null for a temporary one. */
  private Path in(String server) {
    return dataDir == null ? null : dataDir.resolve(server);
  }

  private static int port(String address) {
    return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
  }
}
