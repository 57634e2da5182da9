package io.sendcap.app;

import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import java.io.PrintWriter;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
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

  @Override
  public Integer call() throws InterruptedException {
    // The registry is a child process: it starts while this JVM starts Redis and the broker.
    CompletableFuture<EmbeddedRegistry> registryStarting =
        noSchemaRegistry
            ? CompletableFuture.completedFuture(null)
            : CompletableFuture.supplyAsync(EmbeddedRegistry::start);
    EmbeddedRedis redis;
    EmbeddedKafka kafka;
    try {
      redis = EmbeddedRedis.start();
      kafka = EmbeddedKafka.start(null);
    } catch (RuntimeException e) {
      closeOnceStarted(registryStarting);
      throw e;
    }
    EmbeddedRegistry registry;
    try {
      registry = started(registryStarting);
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
    out.println("Press Ctrl-C to stop.");
    out.flush();
    stopped.await();
    return 0;
  }

  /** Waits for the registry being started and returns it, rethrowing what stopped it. */
  private static EmbeddedRegistry started(CompletableFuture<EmbeddedRegistry> starting) {
    try {
      return starting.join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      throw e;
    }
  }

  /** Closes the registry being started once it is up; it is not needed after all. */
  private static void closeOnceStarted(CompletableFuture<EmbeddedRegistry> starting) {
    try {
      EmbeddedRegistry registry = starting.join();
      if (registry != null) {
        registry.close();
      }
    } catch (CompletionException e) {
      // It did not start: there is nothing to close.
    }
  }
}
