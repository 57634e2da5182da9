package io.sendcap.app;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.TempDirs;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

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

  private static final Duration STALL_LIMIT = Duration.ofMinutes(2);

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
    progress.println("Starting embedded Redis and Kafka (KRaft) ...");
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      SendcapConfig config = config(kafka.bootstrapServers(), redis.uri(), work);
      SendcapConfig.Topics t = config.topics();
      KafkaTopics.create(
          kafka.bootstrapServers(),
          options.partitions(),
          List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
      publishSegments(policies.segmentNames(), kafka.bootstrapServers(), t.segments());
      progress.printf(
          "Kafka %s, Redis %s; blasting %,d sends over %,d users%n",
          kafka.bootstrapServers(), redis.uri(), options.sends(), options.users());
      try (SendcapApp app = SendcapApp.start(config);
          OutputReader outputs = new OutputReader(kafka.bootstrapServers(), t)) {
        long start = System.nanoTime();
        CompletableFuture<Void> produced =
            CompletableFuture.runAsync(() -> produce(kafka.bootstrapServers(), t.input()));
        Tally tally = awaitDecisions(outputs, produced);
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

  private SendcapConfig config(String bootstrap, String redisUri, Path work) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", bootstrap);
    p.setProperty("application.id", "sendcap-demo");
    p.setProperty("state.dir", work.resolve("state").toString());
    p.setProperty("cap.redis.uri", redisUri);
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "1000");
    p.setProperty("policies.file", options.policiesFile().toString());
    return SendcapConfig.from(p, "demo");
  }

  /** Publishes the sample segments: generated users spread evenly over them and none. */
  private void publishSegments(List<String> names, String bootstrap, String topic) {
    List<UserIds> segments = new ArrayList<>();
    names.forEach(n -> segments.add(new UserIds()));
    for (long u = Blast.FIRST_USER; u < Blast.FIRST_USER + options.users(); u++) {
      int segment = Blast.segmentIndex(u, names.size());
      if (segment >= 0) {
        segments.get(segment).add(u);
      }
    }
    Properties client = new Properties();
    client.setProperty("bootstrap.servers", bootstrap);
    SegmentTopic segmentTopic = new SegmentTopic(client, topic);
    for (int i = 0; i < names.size(); i++) {
      segments.get(i).optimize();
      segmentTopic.publish(
          names.get(i), segments.get(i), SegmentTopic.DEFAULT_CHUNK_BYTES, progress);
    }
  }

  private void produce(String bootstrap, String topic) {
    Blast blast = new Blast(options.sends(), options.users(), options.poisonRate(), options.seed());
    SingleObjectAvroSerde<ScheduledSend> serde = new SingleObjectAvroSerde<>(ScheduledSend.class);
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ProducerConfig.LINGER_MS_CONFIG,
            10,
            ProducerConfig.BATCH_SIZE_CONFIG,
            256 * 1024,
            ProducerConfig.COMPRESSION_TYPE_CONFIG,
            "lz4");
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < options.sends(); i++) {
        boolean poison = blast.nextIsPoison();
        ScheduledSend send = blast.send(i);
        byte[] key = Long.toString(send.getUserId()).getBytes(StandardCharsets.UTF_8);
        byte[] value = poison ? Blast.poison(i) : serde.encode(send);
        // Produced as the campaign engine would: at the send's scheduled time.
        long timestamp = send.getScheduledAt().toEpochMilli();
        producer.send(new ProducerRecord<>(topic, null, timestamp, key, value));
      }
      producer.flush();
    }
  }

  private Tally awaitDecisions(OutputReader outputs, CompletableFuture<Void> produced) {
    Tally tally = new Tally();
    long lastProgress = System.nanoTime();
    long lastTotal = 0;
    try (ProgressBar bar =
        new ProgressBarBuilder()
            .setTaskName("decided")
            .setInitialMax(options.sends())
            .setConsumer(new ConsoleProgressBarConsumer(progress))
            .showSpeed()
            .build()) {
      while (tally.total() < options.sends()) {
        if (produced.isCompletedExceptionally()) {
          produced.join();
        }
        outputs.poll(tally, Duration.ofMillis(200));
        bar.stepTo(tally.total());
        if (tally.total() > lastTotal) {
          lastTotal = tally.total();
          lastProgress = System.nanoTime();
        } else if (System.nanoTime() - lastProgress > STALL_LIMIT.toNanos()) {
          throw new IllegalStateException(
              "no decision for " + STALL_LIMIT.toMinutes() + " minutes at " + lastTotal);
        }
      }
    }
    return tally;
  }
}
