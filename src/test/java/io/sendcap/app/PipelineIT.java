package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.Cap;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.Decision;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A blast through the real pipeline: a KRaft broker, Redis and the application with exactly-once
 * processing, checked send by send against the reference model of the rules.
 */
class PipelineIT {
  private static final int SENDS = 10_000;
  private static final int USERS = 1_000;
  private static final int VIPS = 100;

  /** About this many records are poison, and about RESENT are sends produced a second time. */
  private static final int POISON = 50;

  private static final int RESENT = 20;
  private static final Instant T0 = Instant.parse("2026-11-02T06:00:00Z");
  private static final Duration SPAN = Duration.ofHours(20);
  private static final String POLICIES =
      """
      segments:
        - name: vip
          caps:
            - {window: 1h, limit: 2}
          min-interval: 5m
      default:
        caps:
          - {window: 1h, limit: 3}
          - {window: 1d, limit: 6}
        min-interval: 1m
      """;

  private static TestKafka kafka;
  private static EmbeddedRedis redis;
  private static Policies policies;
  @TempDir static Path dir;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    kafka.createTopics(
        4,
        "campaign-sends",
        "deliveries",
        "suppressed",
        "campaign-sends-dlq",
        "deliveries-replay",
        "suppressed-replay",
        "dlq-replay");
    redis = EmbeddedRedis.start();
    Files.writeString(dir.resolve("policies.yaml"), POLICIES);
    Files.createDirectories(dir.resolve("segments"));
    Files.write(
        dir.resolve("segments/vip.ids"),
        LongStream.rangeClosed(1, VIPS).mapToObj(Long::toString).toList());
    policies = Policies.parse(POLICIES, "test");
  }

  @AfterAll
  static void stop() {
    redis.close();
    kafka.close();
  }

  private static SendcapConfig config(String appId, String suffix) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", kafka.bootstrapServers());
    p.setProperty("application.id", appId);
    p.setProperty("state.dir", dir.resolve("state-" + appId).toString());
    p.setProperty("cap.redis.uri", redis.uri());
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "200");
    p.setProperty("batch.max.wait.ms", "20");
    p.setProperty("policies.file", dir.resolve("policies.yaml").toString());
    p.setProperty("segments.dir", dir.resolve("segments").toString());
    if (!suffix.isEmpty()) {
      p.setProperty("topic.deliveries", "deliveries" + suffix);
      p.setProperty("topic.suppressed", "suppressed" + suffix);
      p.setProperty("topic.dlq", "dlq" + suffix);
    }
    return SendcapConfig.from(p, appId);
  }

  /** The input records: sends (some sent twice, a few transactional) and poison, in order. */
  private List<ProducerRecord<byte[], byte[]>> blast() {
    SplittableRandom random = new SplittableRandom(7);
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    List<ScheduledSend> sent = new ArrayList<>();
    for (int i = 0; records.size() < SENDS; i++) {
      long user = 1 + random.nextInt(USERS);
      byte[] key = Long.toString(user).getBytes(StandardCharsets.UTF_8);
      int kind = random.nextInt(SENDS);
      if (kind < POISON) {
        records.add(record(key, ("poison-" + i).getBytes(StandardCharsets.UTF_8)));
      } else if (kind < POISON + RESENT && !sent.isEmpty()) {
        ScheduledSend again = sent.get(random.nextInt(sent.size()));
        records.add(record(userKey(again), sends.encode(again)));
      } else {
        long jitter = random.nextLong(120_000);
        ScheduledSend send =
            ScheduledSend.newBuilder()
                .setMessageId("m" + i)
                .setCampaignId("c" + (i % 7))
                .setUserId(user)
                .setChannel(Channel.values()[random.nextInt(Channel.values().length)])
                .setScheduledAt(T0.plusMillis(SPAN.toMillis() * i / SENDS - jitter))
                .setTransactional(random.nextInt(100) == 0)
                .build();
        sent.add(send);
        records.add(record(key, sends.encode(send)));
      }
    }
    return records;
  }

  private static byte[] userKey(ScheduledSend s) {
    return Long.toString(s.getUserId()).getBytes(StandardCharsets.UTF_8);
  }

  private static ProducerRecord<byte[], byte[]> record(byte[] key, byte[] value) {
    return new ProducerRecord<>("campaign-sends", key, value);
  }

  private void produce(List<ProducerRecord<byte[], byte[]>> records) {
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            kafka.bootstrapServers(),
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            true);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      records.forEach(producer::send);
    }
  }

  /** What happened to one input record, as read from the output topics. */
  private record Outcome(String messageId, boolean allowed, Object detail) {}

  private List<Outcome> outcomes(List<ConsumerRecord<byte[], byte[]>> records, String suffix) {
    List<Outcome> outcomes = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().equals("deliveries" + suffix)) {
        Delivery d = deliveries.decode(r.value());
        outcomes.add(new Outcome(d.getSend().getMessageId(), true, d));
      } else if (r.topic().equals("suppressed" + suffix)) {
        Suppression s = suppressions.decode(r.value());
        outcomes.add(new Outcome(s.getSend().getMessageId(), false, s));
      } else {
        outcomes.add(new Outcome(new String(r.value(), StandardCharsets.UTF_8), false, "DLQ"));
      }
    }
    return outcomes;
  }

  @Test
  void everySendIsDecidedOnceAsTheRulesSayAndAReplayDecidesTheSameWithoutConsumingQuota()
      throws Exception {
    List<ProducerRecord<byte[], byte[]>> input = blast();
    Map<String, Long> inputIds = new TreeMap<>();
    List<ScheduledSend> inputSends = new ArrayList<>();
    for (ProducerRecord<byte[], byte[]> r : input) {
      String v = new String(r.value(), StandardCharsets.UTF_8);
      if (v.startsWith("poison-")) {
        inputIds.merge(v, 1L, Long::sum);
      } else {
        ScheduledSend s = sends.decode(r.value());
        inputSends.add(s);
        inputIds.merge(s.getMessageId(), 1L, Long::sum);
      }
    }

    List<Outcome> first;
    try (SendcapApp app = SendcapApp.start(config("sendcap-it", ""));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(), "deliveries", "suppressed", "campaign-sends-dlq")) {
      produce(input);
      reader.awaitRecords(SENDS, Duration.ofMinutes(3));
      assertThat(app.state()).isEqualTo(KafkaStreams.State.RUNNING);
      first = outcomes(reader.drain(Duration.ofSeconds(2)), "");
    }

    Map<String, Long> outputIds =
        first.stream()
            .collect(
                Collectors.groupingBy(Outcome::messageId, TreeMap::new, Collectors.counting()));
    assertThat(outputIds)
        .as("every input record appears exactly once across deliveries, suppressed and DLQ")
        .isEqualTo(inputIds);
    long poison = inputIds.keySet().stream().filter(id -> id.startsWith("poison-")).count();
    assertThat(poison).isPositive();
    assertThat(first.stream().filter(o -> "DLQ".equals(o.detail()))).hasSize((int) poison);
    assertDecisionsMatchTheModel(inputSends, first);
    assertNoWindowHoldsMoreThanItsCap(first);

    long logged = loggedSends();
    try (SendcapApp replay = SendcapApp.start(config("sendcap-it-replay", "-replay"));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(), "deliveries-replay", "suppressed-replay", "dlq-replay")) {
      List<Outcome> second = outcomes(reader.awaitRecords(SENDS, Duration.ofMinutes(3)), "-replay");
      assertThat(allowedById(second)).isEqualTo(allowedById(first));
      assertThat(replay.redis().calls()).as("the replay asked Redis again").isPositive();
    }
    assertThat(loggedSends()).as("sends logged in Redis after the replay").isEqualTo(logged);
  }

  private static Map<String, Boolean> allowedById(List<Outcome> outcomes) {
    Map<String, Boolean> m = new TreeMap<>();
    outcomes.forEach(o -> m.merge(o.messageId(), o.allowed(), (a, b) -> a && b));
    return m;
  }

  private void assertDecisionsMatchTheModel(List<ScheduledSend> input, List<Outcome> outcomes) {
    SlidingLogModel model =
        new SlidingLogModel(config("model", "").limiter().idempotencyRetention());
    Map<String, Object> expected = new HashMap<>();
    for (ScheduledSend s : input) {
      Policy policy = s.getUserId() <= VIPS ? policies.segments().get(0) : policies.defaultPolicy();
      if (s.getTransactional()) {
        expected.putIfAbsent(s.getMessageId(), "allowed");
        continue;
      }
      long now = s.getScheduledAt().toEpochMilli();
      Decision d =
          model.decide(
              new CapRequest(s.getUserId(), s.getMessageId(), now, policy, s.getChannel(), null));
      expected.putIfAbsent(s.getMessageId(), describe(d, policy));
    }
    Map<String, Object> actual = new HashMap<>();
    for (Outcome o : outcomes) {
      if (o.detail() instanceof Suppression s) {
        actual.putIfAbsent(
            o.messageId(),
            s.getReason()
                + " "
                + s.getCapWindow()
                + " "
                + s.getCapCount()
                + " "
                + s.getNextEligibleAt().toEpochMilli());
      } else if (o.allowed()) {
        actual.putIfAbsent(o.messageId(), "allowed");
      }
    }
    assertThat(actual).isEqualTo(expected);
  }

  private static String describe(Decision d, Policy policy) {
    return switch (d.outcome()) {
      case ALLOWED, DUPLICATE -> "allowed";
      case CAPPED ->
          "CAP "
              + policy.caps().get(d.capIndex()).name()
              + " "
              + d.count()
              + " "
              + d.nextEligibleAt();
      case MIN_INTERVAL -> "MIN_INTERVAL null null " + d.nextEligibleAt();
    };
  }

  private static void assertNoWindowHoldsMoreThanItsCap(List<Outcome> outcomes) {
    Map<Long, List<Long>> allowedTimes = new HashMap<>();
    Map<Long, String> segments = new HashMap<>();
    Set<String> counted = new HashSet<>();
    for (Outcome o : outcomes) {
      if (o.detail() instanceof Delivery d
          && !d.getSend().getTransactional()
          && counted.add(o.messageId())) {
        allowedTimes
            .computeIfAbsent(d.getSend().getUserId(), u -> new ArrayList<>())
            .add(d.getDecidedAt().toEpochMilli());
        segments.put(d.getSend().getUserId(), d.getSegment());
      }
    }
    assertThat(allowedTimes).isNotEmpty();
    allowedTimes.forEach(
        (user, times) -> {
          Policy policy =
              "vip".equals(segments.get(user))
                  ? policies.segments().get(0)
                  : policies.defaultPolicy();
          List<Long> sorted = times.stream().sorted().toList();
          for (Cap cap : policy.caps()) {
            long w = cap.window().toMillis();
            for (long t : sorted) {
              long inside = sorted.stream().filter(x -> x > t - w && x <= t).count();
              assertThat(inside)
                  .as("user %d, cap %s, window ending %d", user, cap.name(), t)
                  .isLessThanOrEqualTo(cap.limit());
            }
          }
        });
  }

  private static long loggedSends() {
    RedisClient client = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      long total = 0;
      for (String key : c.sync().keys("sc:*")) {
        total += c.sync().zcard(key);
      }
      return total;
    } finally {
      client.shutdown();
    }
  }
}
