package io.sendcap.app;

import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.TempDirs;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * {@code sendcap demo}: an embedded Kafka broker and Redis, generated segments, the sample
 * policies, a generated campaign blast through the real pipeline, and a summary of what was
 * decided.
 */
final class Demo {
  /** What the demo does. */
  record Options(
      int sends, int users, int partitions, double poisonRate, long seed, Path policiesFile) {}

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

  /** Runs the demo and returns its result; the servers are stopped when it returns. */
  Result run() throws IOException {
    Path work = TempDirs.create("sendcap-demo");
    Policies policies = Policies.load(options.policiesFile());
    BlastDriver blast =
        new BlastDriver(
            options.sends(), options.users(), options.poisonRate(), options.seed(), progress);
    progress.println("Starting embedded Redis and Kafka (KRaft) ...");
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      String bootstrap = kafka.bootstrapServers();
      SendcapConfig config =
          SendcapConfig.from(
              BlastDriver.appProperties(
                  "sendcap-demo",
                  bootstrap,
                  redis.uri(),
                  work.resolve("state"),
                  options.policiesFile()),
              "demo");
      SendcapConfig.Topics t = config.topics();
      KafkaTopics.create(
          bootstrap,
          options.partitions(),
          List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
      blast.publishSegments(policies.segmentNames(), bootstrap, t.segments());
      progress.printf(
          "Kafka %s, Redis %s; blasting %,d sends over %,d users%n",
          bootstrap, redis.uri(), options.sends(), options.users());
      try (SendcapApp app = SendcapApp.start(config);
          OutputReader reader = new OutputReader(bootstrap, Tally.topics(t))) {
        Tally tally = new Tally(config);
        long start = System.nanoTime();
        CompletableFuture<Long> produced = blast.produceAsync(bootstrap, t.input());
        blast.awaitOnePerSend("decided", reader, tally::add, produced);
        long elapsed = (System.nanoTime() - start) / 1_000_000;
        return new Result(
            options.sends(),
            tally,
            elapsed,
            app.redis().calls(),
            app.redis().decisions(),
            app.redis().flushes());
      }
    } finally {
      TempDirs.delete(work);
    }
  }
}
