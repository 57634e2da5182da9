package io.sendcap.demo;

import io.sendcap.app.SendcapApp;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.blast.BlastDriver;
import io.sendcap.blast.KafkaTopics;
import io.sendcap.cli.OutputReader;
import io.sendcap.cli.ToolSerdes;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import io.sendcap.embedded.TempDirs;
import io.sendcap.serde.AvroSerdes;
import io.sendcap.serde.SchemaRegistrySettings;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * {@code sendcap demo}: an embedded Kafka broker and Redis, generated segments, the sample
 * policies, a generated campaign blast through the real pipeline, and a summary of what was
 * decided.
 */
final class Demo {
  /** What the demo does. */
  record Options(
      int sends,
      int users,
      int partitions,
      double poisonRate,
      long seed,
      Path policiesFile,
      boolean schemaRegistry) {}

  /** What the demo measured. */
  record Result(
      int sends,
      Tally tally,
      long elapsedMs,
      long redisCalls,
      long redisDecisions,
      long redisFlushes) {
    double sendsPerSecond() {
      return sends * 1000.0 / Math.max(1, elapsedMs);
    }

    /** Script calls per pipelined flush, that is per network round trip. */
    double callsPerFlush() {
      return redisFlushes == 0 ? 0 : (double) redisCalls / redisFlushes;
    }

    /** Sends decided per pipelined flush, that is per network round trip. */
    double decisionsPerFlush() {
      return redisFlushes == 0 ? 0 : (double) redisDecisions / redisFlushes;
    }
  }

  private final Options options;
  private final PrintStream progress;

  Demo(Options options, PrintStream progress) {
    this.options = options;
    this.progress = progress;
  }

  /** The demo was stopped (Ctrl-C, SIGTERM) before it had decided the blast. */
  static final class StoppedException extends RuntimeException {
    StoppedException(Throwable cause) {
      super("stopped before the blast was decided", cause);
    }
  }

  static final String STOPPED =
      "sendcap demo: stopped; the embedded servers are stopped and their files deleted";

  /** How long a signal waits for the demo to stop what it started. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);

  /**
   * Runs the demo and returns its result; the servers are stopped when it returns.
   *
   * <p>Ctrl-C or SIGTERM stops it: the JVM's shutdown interrupts this thread, which stops the
   * application and the embedded servers and deletes their files, as at the end of a run, and the
   * JVM exits once that is done.
   *
   * @throws StoppedException if a signal stopped it
   */
  Result run() throws IOException {
    Thread demo = Thread.currentThread();
    CountDownLatch stopped = new CountDownLatch(1);
    AtomicBoolean signalled = new AtomicBoolean();
    Thread onSignal =
        new Thread(
            () -> {
              signalled.set(true);
              progress.println("Stopping the demo: the application, Kafka and Redis ...");
              demo.interrupt();
              try {
                stopped.await(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
            },
            "demo-stop");
    Runtime.getRuntime().addShutdownHook(onSignal);
    try {
      return runOnServers();
    } catch (RuntimeException e) {
      if (signalled.get()) {
        // Printed before the hook is released: the JVM exits as soon as the hook returns.
        progress.println(STOPPED);
        progress.flush();
        throw new StoppedException(e);
      }
      throw e;
    } finally {
      stopped.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(onSignal);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running: it waits for the count-down above.
      }
    }
  }

  private Result runOnServers() throws IOException {
    Path work = TempDirs.create("sendcap-demo");
    Policies policies = Policies.load(options.policiesFile());
    BlastDriver blast =
        new BlastDriver(
            options.sends(), options.users(), options.poisonRate(), options.seed(), progress);
    progress.println(
        options.schemaRegistry()
            ? "Starting embedded Redis, Kafka (KRaft) and a Schema Registry ..."
            : "Starting embedded Redis and Kafka (KRaft) ...");
    // The registry is a child process: it starts while this JVM starts Redis and the broker.
    EmbeddedRegistry.Starting registryStarting =
        options.schemaRegistry() ? EmbeddedRegistry.startInBackground() : null;
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        EmbeddedKafka kafka = EmbeddedKafka.start(null);
        EmbeddedRegistry registry = registryStarting == null ? null : registryStarting.await()) {
      String bootstrap = kafka.bootstrapServers();
      Properties props =
          BlastDriver.appProperties(
              "sendcap-demo",
              bootstrap,
              redis.uri(),
              work.resolve("state"),
              options.policiesFile());
      if (registry != null) {
        props.setProperty("avro.serde", AvroSerdes.CONFLUENT);
        props.setProperty(SchemaRegistrySettings.URL, registry.url());
      }
      SendcapConfig config = SendcapConfig.from(props, "demo");
      SendcapConfig.Topics t = config.topics();
      KafkaTopics.create(
          bootstrap,
          options.partitions(),
          List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
      blast.publishSegments(policies.segmentNames(), bootstrap, t.segments());
      progress.printf("Kafka %s, Redis %s%n", bootstrap, redis.uri());
      if (registry != null) {
        progress.printf(
            "Schema Registry %s: sends and outputs in the Confluent wire format%n", registry.url());
      }
      progress.printf("Blasting %,d sends over %,d users%n", options.sends(), options.users());
      try (SendcapApp app = SendcapApp.start(config);
          OutputReader reader = new OutputReader(bootstrap, Tally.topics(t))) {
        Tally tally = new Tally(config);
        long start = System.nanoTime();
        // Encoded as the application reads them: registered under the input topic's subject first.
        Function<ScheduledSend, byte[]> encoding =
            ToolSerdes.writer(config, ScheduledSend.class, t.input());
        CompletableFuture<Long> produced = blast.produceAsync(bootstrap, t.input(), encoding);
        blast.awaitOnePerSend("decided", reader, tally::add, produced);
        long elapsed = (System.nanoTime() - start) / 1_000_000;
        return new Result(
            options.sends(),
            tally,
            elapsed,
            app.redis().calls(),
            app.redis().decisions(),
            app.redis().flushes());
      } finally {
        // A signal interrupts this thread to stop the blast; that done, the servers must stop
        // cleanly, which an interrupt still pending would cut short (the broker's controlled
        // shutdown waits on a future, the child processes are waited for).
        Thread.interrupted();
      }
    } finally {
      if (registryStarting != null) {
        // Closes it again when it was used (a no-op), and once it is up when Redis or Kafka failed.
        registryStarting.discard();
      }
      TempDirs.delete(work);
    }
  }
}
