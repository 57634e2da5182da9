package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.cli.Main;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.Cli;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Segments through a real broker with its default message size limit: published in chunks, loaded
 * by every application instance through its global store, swapped mid-stream, and never half-used.
 */
class SegmentsIT {
  private static final String POLICIES =
      """
      segments:
        - name: vip
          caps:
            - {window: 1d, limit: 100}
        - name: big
          caps:
            - {window: 1d, limit: 100}
      default:
        caps:
          - {window: 1d, limit: 100}
      """;

  private static TestKafka kafka;
  private static EmbeddedRedis redis;
  @TempDir static Path dir;

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    kafka.createTopics(2, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    redis = EmbeddedRedis.start();
    Files.writeString(dir.resolve("policies.yaml"), POLICIES);
    Files.writeString(
        dir.resolve("sendcap.properties"),
        "bootstrap.servers="
            + kafka.bootstrapServers()
            + "\n"
            + "policies.file="
            + dir.resolve("policies.yaml")
            + "\n");
  }

  @AfterAll
  static void stop() {
    redis.close();
    kafka.close();
  }

  private static SegmentTopic topic() {
    Properties client = new Properties();
    client.setProperty("bootstrap.servers", kafka.bootstrapServers());
    return new SegmentTopic(client, "segments");
  }

  private static SendcapApp startApp(String instance, Map<String, String> extra) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", kafka.bootstrapServers());
    p.setProperty("application.id", "segments-it");
    p.setProperty("http.port", "0");
    p.setProperty("state.dir", dir.resolve("state-" + instance).toString());
    p.setProperty("cap.redis.uri", redis.uri());
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.wait.ms", "20");
    p.setProperty("policies.file", dir.resolve("policies.yaml").toString());
    p.putAll(extra);
    return SendcapApp.start(io.sendcap.config.SendcapConfig.from(p, instance));
  }

  /** About 32 MB serialized: 4,096 containers of 5,000 random ids each. */
  private static UserIds bigSegment() {
    SplittableRandom random = new SplittableRandom(1);
    UserIds ids = new UserIds();
    for (long container = 0; container < 4_096; container++) {
      for (int i = 0; i < 5_000; i++) {
        ids.add(container * 65_536 + random.nextInt(65_536));
      }
    }
    ids.optimize();
    return ids;
  }

  private static UserIds range(long from, long to) {
    UserIds ids = new UserIds();
    for (long u = from; u <= to; u++) {
      ids.add(u);
    }
    return ids;
  }

  @Test
  void everythingAboutSegmentsInOneBrokerLifetime() throws Exception {
    // Start-up names what is missing rather than deciding sends without it.
    assertThatThrownBy(
            () -> {
              topic().ensureExists();
              startApp("early", Map.of("segments.load.timeout.ms", "1500"));
            })
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("segment(s) [vip, big]")
        .hasMessageContaining("segments.load.timeout.ms");

    UserIds big = bigSegment();
    assertThat(big.toPortableBytes().length).isGreaterThan(30 * 1024 * 1024);
    topic().publish("big", big, SegmentTopic.DEFAULT_CHUNK_BYTES, System.out);
    topic()
        .publish("vip", range(BASE + 1, BASE + 50), SegmentTopic.DEFAULT_CHUNK_BYTES, System.out);

    try (SendcapApp first = startApp("first", Map.of());
        SendcapApp second = startApp("second", Map.of())) {
      // A 32 MB bitmap passed the broker's 1 MiB limit and is identical on both instances.
      assertThat(first.segments().loaded().get("big").ids()).isEqualTo(big);
      assertThat(second.segments().loaded().get("big").ids()).isEqualTo(big);
      assertThat(first.segments().version("vip")).isEqualTo(1);

      aNewVersionAppliesToTheSendsAfterIt(first, second);
      aPublisherKilledMidPublishLeavesTheOldVersionInUse(first);
    }
    theCommandsReadTheTopic();
  }

  private void aNewVersionAppliesToTheSendsAfterIt(SendcapApp first, SendcapApp second) {
    try (TopicReader outputs =
        new TopicReader(kafka.bootstrapServers(), "deliveries", "suppressed")) {
      produce(0, 40); // users BASE + 1 to BASE + 40, in vip v1
      Map<String, String> before = segmentsOf(outputs.awaitRecords(40, Duration.ofSeconds(60)));
      assertThat(before).hasSize(40).containsOnlyKeys(messages(0, 40));
      assertThat(before.values()).containsOnly("vip");

      topic().publish("vip", range(1_000, 1_050), SegmentTopic.DEFAULT_CHUNK_BYTES, System.out);
      TopicReader.await(
          "vip v2 on both instances",
          Duration.ofSeconds(30),
          () -> first.segments().version("vip") == 2 && second.segments().version("vip") == 2);
      produce(40, 40); // the same users, no longer in vip v2
      Map<String, String> all = segmentsOf(outputs.awaitRecords(80, Duration.ofSeconds(60)));
      assertThat(all).hasSize(80);
      for (String later : messages(40, 40)) {
        assertThat(all.get(later)).as(later).isEqualTo("default");
      }
    }
  }

  private void aPublisherKilledMidPublishLeavesTheOldVersionInUse(SendcapApp app) throws Exception {
    Path bitmap = dir.resolve("next.roaring");
    try (OutputStream out = Files.newOutputStream(bitmap)) {
      bigSegment().writePortable(out);
    }
    long before = endOffset();
    Process publisher =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName(),
                "segments",
                "publish",
                "--config",
                dir.resolve("sendcap.properties").toString(),
                "--name",
                "vip",
                "--bitmap",
                bitmap.toString(),
                "--chunk-bytes",
                "1024")
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("publisher.log").toFile())
            .start();
    TopicReader.await(
        "the publisher's first chunks",
        Duration.ofSeconds(60),
        () -> endOffset() > before + 10 || !publisher.isAlive());
    publisher.destroyForcibly().waitFor();
    long written = endOffset() - before;
    assertThat(written).as("chunks written before the kill").isBetween(11L, 30_000L);

    SegmentTopic.Contents contents = topic().read(List.of("vip", "big"));
    assertThat(contents.registry().version("vip")).isEqualTo(2);
    assertThat(contents.highestVersion("vip")).isEqualTo(3);
    assertThat(app.segments().version("vip")).isEqualTo(2);
    assertThat(app.segments().segmentOf(1_000)).isEqualTo("vip");

    // The next publish skips the dead version and deletes its chunks.
    SegmentRecords.Manifest next =
        topic().publish("vip", range(7, 7), SegmentTopic.DEFAULT_CHUNK_BYTES, System.out);
    assertThat(next.version()).isEqualTo(4);
    TopicReader.await("vip v4", Duration.ofSeconds(30), () -> app.segments().version("vip") == 4);
    assertThat(app.segments().segmentOf(7)).isEqualTo("vip");
    assertThat(topic().read(List.of()).chunkKeys())
        .allMatch(k -> !k.startsWith("vip/") || k.startsWith("vip/4/"));
  }

  private void theCommandsReadTheTopic() {
    String list = run("segments", "list");
    assertThat(list).contains("big").contains("vip").contains("priority 1");
    assertThat(run("segments", "lookup", "7")).contains("user 7: segment vip");
    assertThat(run("segments", "lookup", "999999999999"))
        .contains("in no segment of the policy file -> the default policy");
    assertThat(run("segments", "check")).contains("overlap:").contains("2 segments");
  }

  private static String run(String... args) {
    String[] all = new String[args.length + 2];
    System.arraycopy(args, 0, all, 0, args.length);
    all[args.length] = "--config";
    all[args.length + 1] = dir.resolve("sendcap.properties").toString();
    Cli.Result result = Cli.run(all);
    assertThat(result.exit())
        .as("exit code of %s; output %s", String.join(" ", args), result.out())
        .isZero();
    return result.out();
  }

  private static long endOffset() {
    try (KafkaConsumer<byte[], byte[]> c =
        new KafkaConsumer<>(
            Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()),
            new ByteArrayDeserializer(),
            new ByteArrayDeserializer())) {
      TopicPartition p = new TopicPartition("segments", 0);
      return c.endOffsets(List.of(p)).get(p);
    }
  }

  private static final SingleObjectAvroSerde<ScheduledSend> SENDS =
      new SingleObjectAvroSerde<>(ScheduledSend.class);

  /** Above every id of {@link #bigSegment}. */
  private static final long BASE = 300_000_000L;

  /** When the sends are scheduled: this hour, within cap.max-skew.ms of when they are produced. */
  private static final Instant T0 = Instant.now().truncatedTo(ChronoUnit.HOURS);

  /** Sends messages m{first} to m{first + count - 1}, message i to user BASE + 1 + i % 40. */
  private static void produce(int first, int count) {
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(
            Map.of("bootstrap.servers", kafka.bootstrapServers()),
            new ByteArraySerializer(),
            new ByteArraySerializer())) {
      for (int i = first; i < first + count; i++) {
        long user = BASE + 1 + i % 40;
        ScheduledSend s =
            ScheduledSend.newBuilder()
                .setMessageId("m" + i)
                .setCampaignId("c")
                .setUserId(user)
                .setChannel(Channel.EMAIL)
                .setScheduledAt(T0.plusSeconds(i))
                .build();
        // stamped when produced, as a campaign engine's producer does
        producer.send(
            new ProducerRecord<>(
                "campaign-sends",
                Long.toString(user).getBytes(StandardCharsets.UTF_8),
                SENDS.encode(s)));
      }
    }
  }

  private static List<String> messages(int first, int count) {
    List<String> ids = new ArrayList<>();
    for (int i = first; i < first + count; i++) {
      ids.add("m" + i);
    }
    return ids;
  }

  /** The segment each message was decided under, by message id. */
  private static Map<String, String> segmentsOf(List<ConsumerRecord<byte[], byte[]>> records) {
    SingleObjectAvroSerde<Delivery> deliveries = new SingleObjectAvroSerde<>(Delivery.class);
    SingleObjectAvroSerde<Suppression> suppressions =
        new SingleObjectAvroSerde<>(Suppression.class);
    Map<String, String> segments = new java.util.TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().equals("deliveries")) {
        Delivery d = deliveries.decode(r.value());
        segments.put(d.getSend().getMessageId(), d.getSegment());
      } else {
        Suppression s = suppressions.decode(r.value());
        segments.put(s.getSend().getMessageId(), s.getSegment());
      }
    }
    return segments;
  }
}
