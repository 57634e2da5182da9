package io.sendcap.blast;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.cli.OutputReader;
import io.sendcap.cli.ProgressBars;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import java.util.function.Function;
import me.tongfei.progressbar.ProgressBar;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A generated campaign blast driven against a broker: the segments of its users published, its
 * sends produced, and the records they lead to awaited on output topics, with a progress bar.
 *
 * <p>Shared by {@code demo} and {@code bench pipeline}. The sends are scheduled over the week from
 * the start of the current UTC day and produced as a campaign engine produces them, stamped with
 * the time they are produced. Every blast a driver produces is the same, byte for byte; two drivers
 * with the same options made the same UTC day produce the same records.
 */
public final class BlastDriver {
  /** How long awaiting output tolerates no new record before it gives up. */
  public static final Duration STALL_LIMIT = Duration.ofMinutes(2);

  private static final Duration POLL_WAIT = Duration.ofMillis(200);

  private final int sends;
  private final int users;
  private final double poisonRate;
  private final long seed;
  private final PrintStream progress;
  private final Instant start;

  /**
   * Creates a driver of {@code sends} sends to {@code users} users, a share {@code poisonRate} of
   * them not Avro at all; {@code progress} receives what is happening.
   */
  public BlastDriver(int sends, int users, double poisonRate, long seed, PrintStream progress) {
    this.sends = sends;
    this.users = users;
    this.poisonRate = poisonRate;
    this.seed = seed;
    this.progress = progress;
    // Scheduled from the start of today: at most a day behind and less than a week ahead of when
    // they are produced, so within cap.max-skew.ms (7 days) of their records' timestamps. A fixed
    // date would fall outside it as the calendar moves on, and go to the dead-letter topic.
    this.start = Instant.now().truncatedTo(ChronoUnit.DAYS);
  }

  /**
   * The properties a blast runs sendcap with on embedded servers: the event clock (decisions do not
   * depend on how fast the blast runs) and batches of 1,000 sends; everything else at its default.
   */
  public static Properties appProperties(
      String applicationId,
      String bootstrapServers,
      String redisUri,
      Path stateDir,
      Path policiesFile) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", bootstrapServers);
    p.setProperty("application.id", applicationId);
    p.setProperty("http.port", "0");
    p.setProperty("state.dir", stateDir.toString());
    p.setProperty("cap.redis.uri", redisUri);
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "1000");
    p.setProperty("policies.file", policiesFile.toString());
    return p;
  }

  /** Publishes the segments: the generated users spread evenly over them and over none. */
  public void publishSegments(List<String> names, String bootstrapServers, String topic) {
    List<UserIds> segments = new ArrayList<>();
    names.forEach(n -> segments.add(new UserIds()));
    for (long u = Blast.FIRST_USER; u < Blast.FIRST_USER + users; u++) {
      int segment = Blast.segmentIndex(u, names.size());
      if (segment >= 0) {
        segments.get(segment).add(u);
      }
    }
    Properties client = new Properties();
    client.setProperty("bootstrap.servers", bootstrapServers);
    SegmentTopic segmentTopic = new SegmentTopic(client, topic);
    for (int i = 0; i < names.size(); i++) {
      segments.get(i).optimize();
      segmentTopic.publish(
          names.get(i), segments.get(i), SegmentTopic.DEFAULT_CHUNK_BYTES, progress);
    }
  }

  /**
   * Produces the blast to {@code topic} in Avro single-object encoding, on a thread of the common
   * pool; see {@link #produce}.
   */
  public CompletableFuture<Long> produceAsync(String bootstrapServers, String topic) {
    SingleObjectAvroSerde<ScheduledSend> serde = new SingleObjectAvroSerde<>(ScheduledSend.class);
    return produceAsync(bootstrapServers, topic, serde::encode);
  }

  /**
   * Produces the blast to {@code topic}, each send encoded by {@code encoding}, on a thread of the
   * common pool; see {@link #produce}.
   */
  public CompletableFuture<Long> produceAsync(
      String bootstrapServers, String topic, Function<ScheduledSend, byte[]> encoding) {
    return CompletableFuture.supplyAsync(() -> produce(bootstrapServers, topic, encoding));
  }

  /**
   * Produces every record of the blast to {@code topic}, key = user id, value = the send as {@code
   * encoding} encodes it (or poison), and returns the bytes of the keys and values produced.
   */
  public long produce(
      String bootstrapServers, String topic, Function<ScheduledSend, byte[]> encoding) {
    Blast blast = new Blast(sends, users, poisonRate, seed, start);
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrapServers,
            ProducerConfig.LINGER_MS_CONFIG,
            10,
            ProducerConfig.BATCH_SIZE_CONFIG,
            256 * 1024,
            ProducerConfig.COMPRESSION_TYPE_CONFIG,
            "lz4");
    long bytes = 0;
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      for (int i = 0; i < sends; i++) {
        boolean poison = blast.nextIsPoison();
        ScheduledSend send = blast.send(i);
        byte[] key = Long.toString(send.getUserId()).getBytes(StandardCharsets.UTF_8);
        byte[] value = poison ? Blast.poison(i) : encoding.apply(send);
        // Produced as a campaign engine's producer does by default: stamped when produced.
        producer.send(new ProducerRecord<>(topic, key, value));
        bytes += key.length + value.length;
      }
      producer.flush();
    }
    return bytes;
  }

  /**
   * Reads records from {@code reader} into {@code each} until one per send has arrived, showing
   * progress as {@code task}.
   *
   * @throws java.util.concurrent.CompletionException if producing failed
   * @throws IllegalStateException if no record arrives for {@link #STALL_LIMIT}
   */
  public void awaitOnePerSend(
      String task,
      OutputReader reader,
      Consumer<ConsumerRecord<byte[], byte[]>> each,
      CompletableFuture<?> produced) {
    long arrived = 0;
    long lastArrival = System.nanoTime();
    try (ProgressBar bar = ProgressBars.on(progress, task, sends).showSpeed().build()) {
      while (arrived < sends) {
        if (produced.isCompletedExceptionally()) {
          produced.join();
        }
        int polled = reader.poll(POLL_WAIT, each);
        arrived += polled;
        bar.stepTo(arrived);
        if (polled > 0) {
          lastArrival = System.nanoTime();
        } else if (System.nanoTime() - lastArrival > STALL_LIMIT.toNanos()) {
          throw new IllegalStateException(
              "no record for "
                  + STALL_LIMIT.toMinutes()
                  + " minutes after "
                  + arrived
                  + " ("
                  + task
                  + ")");
        }
      }
    }
  }
}
