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
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.Decision;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.ToLongFunction;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A blast with known policies for the pipeline's integration tests: the input records, how to
 * produce them, how to read what sendcap made of them, and the checks a user would make.
 */
final class CapScenario {
  static final int VIPS = 100;
  static final String POLICIES =
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

  /**
   * When the blasts start: this hour. Records are stamped when they are produced, as a campaign
   * engine's producer stamps them, and a send's scheduledAt must be within cap.max-skew.ms (7 days)
   * of that; a fixed date would drift out of it as the calendar moves on.
   */
  static final Instant T0 = Instant.now().truncatedTo(ChronoUnit.HOURS);

  private static final Duration SPAN = Duration.ofHours(20);

  final Policies policies = Policies.parse(POLICIES, "test");
  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);

  /** What happened to one input record, as read from the output topics. */
  record Outcome(String messageId, boolean allowed, Object detail) {}

  /** Writes the policy file into {@code dir}. */
  static void writeFiles(Path dir) throws IOException {
    Files.writeString(dir.resolve("policies.yaml"), POLICIES);
  }

  /** Publishes segment vip, users 1 to {@link #VIPS}, to the segments topic. */
  static void publishSegments(String bootstrap) {
    publishSegments(bootstrap, "segments");
  }

  /** Publishes segment vip, users 1 to {@link #VIPS}, to the segments topic {@code topicName}. */
  static void publishSegments(String bootstrap, String topicName) {
    Properties client = new Properties();
    client.setProperty("bootstrap.servers", bootstrap);
    SegmentTopic topic = new SegmentTopic(client, topicName);
    UserIds vips = new UserIds();
    LongStream.rangeClosed(1, VIPS).forEach(vips::add);
    topic.publish("vip", vips, SegmentTopic.DEFAULT_CHUNK_BYTES, System.out);
  }

  /** Settings of an application on the files of {@link #writeFiles}, with the event clock. */
  static Properties settings(Path dir, String bootstrap, String redisUri, String appId) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", bootstrap);
    p.setProperty("application.id", appId);
    p.setProperty("http.port", "0");
    p.setProperty("state.dir", dir.resolve("state-" + appId).toString());
    p.setProperty("cap.redis.uri", redisUri);
    p.setProperty("cap.clock", "event");
    p.setProperty("batch.max.records", "200");
    p.setProperty("batch.max.wait.ms", "20");
    p.setProperty("policies.file", dir.resolve("policies.yaml").toString());
    return p;
  }

  /**
   * The input records, in order: {@code count} records to users 1 to {@code users}, scheduled over
   * 20 hours with some out of order, a few transactional; about {@code poison} of them not Avro and
   * about {@code resent} a send produced a second time.
   */
  List<ProducerRecord<byte[], byte[]>> records(
      String topic, int count, int users, int poison, int resent, long seed) {
    return records(topic, count, users, poison, resent, seed, SPAN);
  }

  /**
   * The input records of {@link #records(String, int, int, int, int, long)}, scheduled over {@code
   * span} from {@link #T0} instead of 20 hours.
   */
  List<ProducerRecord<byte[], byte[]>> records(
      String topic, int count, int users, int poison, int resent, long seed, Duration span) {
    SplittableRandom random = new SplittableRandom(seed);
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    List<ScheduledSend> sent = new ArrayList<>();
    for (int i = 0; records.size() < count; i++) {
      int kind = random.nextInt(count);
      long user = 1 + random.nextInt(users);
      if (kind < poison) {
        records.add(
            new ProducerRecord<>(
                topic, key(user), ("poison-" + seed + "-" + i).getBytes(StandardCharsets.UTF_8)));
      } else if (kind < poison + resent && !sent.isEmpty()) {
        ScheduledSend again = sent.get(random.nextInt(sent.size()));
        records.add(record(topic, again, sends.encode(again)));
      } else {
        ScheduledSend send =
            ScheduledSend.newBuilder()
                .setMessageId("m" + seed + "-" + i)
                .setCampaignId("c" + (i % 7))
                .setUserId(user)
                .setChannel(Channel.values()[random.nextInt(Channel.values().length)])
                .setScheduledAt(
                    T0.plusMillis(span.toMillis() * i / count - random.nextLong(120_000)))
                .setTransactional(random.nextInt(100) == 0)
                .build();
        sent.add(send);
        records.add(record(topic, send, sends.encode(send)));
      }
    }
    return records;
  }

  /**
   * The record of a send as a campaign engine produces it: keyed by user, without a timestamp, so
   * that the producer stamps it with the time it is produced (a broker refuses records stamped more
   * than an hour ahead, and deletes those older than the retention, 7 days by default).
   */
  static ProducerRecord<byte[], byte[]> record(String topic, ScheduledSend send, byte[] value) {
    return new ProducerRecord<>(topic, key(send.getUserId()), value);
  }

  private static byte[] key(long user) {
    return Long.toString(user).getBytes(StandardCharsets.UTF_8);
  }

  /** Produces the records, idempotently, and waits until the broker has them all. */
  static void produce(String bootstrap, List<ProducerRecord<byte[], byte[]>> records) {
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            true);
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      records.forEach(producer::send);
    }
  }

  /** How many times each message id (or poison value) occurs in the input. */
  Map<String, Long> idsOf(List<ProducerRecord<byte[], byte[]>> records) {
    Map<String, Long> ids = new TreeMap<>();
    for (ProducerRecord<byte[], byte[]> r : records) {
      ids.merge(idOf(r.value()), 1L, Long::sum);
    }
    return ids;
  }

  /**
   * The id of an input or output record's value: the message id of a send sendcap's schema can
   * read, the text of a {@code poison-} value, else the value itself in Base64.
   */
  String idOf(byte[] value) {
    String text = new String(value, StandardCharsets.UTF_8);
    if (text.startsWith("poison-")) {
      return text;
    }
    try {
      return sends.decode(value).getMessageId();
    } catch (SerializationException e) {
      return "unreadable:" + Base64.getEncoder().encodeToString(value);
    }
  }

  /** The sends among the records, in order. */
  List<ScheduledSend> sendsOf(List<ProducerRecord<byte[], byte[]>> records) {
    return records.stream()
        .map(ProducerRecord::value)
        .filter(v -> !new String(v, StandardCharsets.UTF_8).startsWith("poison-"))
        .map(sends::decode)
        .toList();
  }

  /** Reads output records of the given deliveries and suppressed topics; the rest are DLQ. */
  List<Outcome> outcomes(
      List<ConsumerRecord<byte[], byte[]>> records, String deliveryTopic, String suppressedTopic) {
    List<Outcome> outcomes = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().equals(deliveryTopic)) {
        Delivery d = deliveries.decode(r.value());
        outcomes.add(new Outcome(d.getSend().getMessageId(), true, d));
      } else if (r.topic().equals(suppressedTopic)) {
        Suppression s = suppressions.decode(r.value());
        outcomes.add(new Outcome(s.getSend().getMessageId(), false, s));
      } else {
        outcomes.add(new Outcome(idOf(r.value()), false, "DLQ"));
      }
    }
    return outcomes;
  }

  /** Checks that every input record appears exactly once across the outputs. */
  void assertEachInputOnce(List<ProducerRecord<byte[], byte[]>> input, List<Outcome> outcomes) {
    Map<String, Long> outputIds =
        outcomes.stream()
            .collect(
                Collectors.groupingBy(Outcome::messageId, TreeMap::new, Collectors.counting()));
    assertThat(outputIds)
        .as("every input record appears exactly once across deliveries, suppressed and DLQ")
        .isEqualTo(idsOf(input));
  }

  /** Whether each message id was delivered (all of its records) or not. */
  static Map<String, Boolean> allowedById(List<Outcome> outcomes) {
    Map<String, Boolean> m = new TreeMap<>();
    outcomes.forEach(o -> m.merge(o.messageId(), o.allowed(), (a, b) -> a && b));
    return m;
  }

  /**
   * Checks that the sends allowed are those the model of the rules allows. After a batch whose
   * calls Redis ran but answered too late, a capped send of it is decided again against the sends
   * logged after it, so only its suppression's details may differ.
   */
  void assertSameSendsAllowedAsTheModel(
      List<ScheduledSend> input, List<Outcome> outcomes, Duration retention) {
    Map<String, Boolean> expected = new TreeMap<>();
    expectedByTheModel(input, retention).forEach((id, d) -> expected.put(id, d.equals("allowed")));
    assertThat(allowedById(outcomes)).isEqualTo(expected);
  }

  /** Checks every decision against the reference model of the rules, send by send. */
  /**
   * Produces {@code input}, reads one output per send through {@code reader} (opened before the
   * blast, on {@code deliveryTopic}, {@code suppressedTopic} and the dead-letter topic), and checks
   * that each input was decided once and as the model decides under {@code settings}; returns the
   * outcomes.
   */
  List<Outcome> assertBlastDecidedAsTheModel(
      String bootstrap,
      List<ProducerRecord<byte[], byte[]>> input,
      TopicReader reader,
      String deliveryTopic,
      String suppressedTopic,
      Properties settings) {
    produce(bootstrap, input);
    List<Outcome> outcomes =
        outcomes(
            reader.awaitRecords(input.size(), Duration.ofMinutes(2)),
            deliveryTopic,
            suppressedTopic);
    assertEachInputOnce(input, outcomes);
    assertDecisionsMatchTheModel(
        sendsOf(input), outcomes, config(settings, "").limiter().idempotencyRetention());
    return outcomes;
  }

  void assertDecisionsMatchTheModel(
      List<ScheduledSend> input, List<Outcome> outcomes, Duration retention) {
    assertSameDecisions(describedById(outcomes), expectedByTheModel(input, retention));
  }

  /**
   * Checks that sendcap decided each send as the model did, naming only the sends where they differ
   * (a blast's thousands of equal decisions would hide them in the message).
   */
  private static void assertSameDecisions(Map<String, String> actual, Map<String, String> model) {
    Map<String, String> differing = new TreeMap<>();
    Set<String> ids = new HashSet<>(actual.keySet());
    ids.addAll(model.keySet());
    for (String id : ids) {
      if (!Objects.equals(actual.get(id), model.get(id))) {
        differing.put(id, "sendcap: " + actual.get(id) + ", model: " + model.get(id));
      }
    }
    assertThat(differing).as("sends decided otherwise than the model decides them").isEmpty();
  }

  /**
   * Checks every decision against the reference model of the rules, send by send, each send decided
   * at the time its output says it was ({@code decidedAt}), as under the wall clock. A send in the
   * input more than once is decided at its outputs' times in turn, the earliest first: one user's
   * sends are decided in input order.
   */
  void assertDecisionsMatchTheModelAtTheirDecisionTimes(
      List<ScheduledSend> input, List<Outcome> outcomes, Duration retention) {
    Map<String, List<Long>> times = new HashMap<>();
    for (Outcome o : outcomes) {
      Instant decidedAt =
          o.detail() instanceof Delivery d
              ? d.getDecidedAt()
              : ((Suppression) o.detail()).getDecidedAt();
      times.computeIfAbsent(o.messageId(), id -> new ArrayList<>()).add(decidedAt.toEpochMilli());
    }
    times.values().forEach(Collections::sort);
    Map<String, Integer> seen = new HashMap<>();
    Map<String, String> expected =
        expectedByTheModel(
            input,
            retention,
            s ->
                times.get(s.getMessageId()).get(seen.merge(s.getMessageId(), 1, Integer::sum) - 1));
    assertSameDecisions(describedById(outcomes), expected);
  }

  /** Each message id's first decision as the model's are described: allowed, or its suppression. */
  private static Map<String, String> describedById(List<Outcome> outcomes) {
    Map<String, String> described = new HashMap<>();
    for (Outcome o : outcomes) {
      if (o.detail() instanceof Suppression s) {
        described.putIfAbsent(o.messageId(), describe(s));
      } else if (o.allowed()) {
        described.putIfAbsent(o.messageId(), "allowed");
      }
    }
    return described;
  }

  private Map<String, String> expectedByTheModel(List<ScheduledSend> input, Duration retention) {
    return expectedByTheModel(input, retention, s -> s.getScheduledAt().toEpochMilli());
  }

  /** The model's decisions of the sends in input order, each at {@code decisionTime}. */
  private Map<String, String> expectedByTheModel(
      List<ScheduledSend> input, Duration retention, ToLongFunction<ScheduledSend> decisionTime) {
    SlidingLogModel model = new SlidingLogModel(retention);
    Map<String, String> expected = new HashMap<>();
    for (ScheduledSend s : input) {
      Policy policy = policyOf(s.getUserId());
      long now = decisionTime.applyAsLong(s);
      if (s.getTransactional()) {
        expected.putIfAbsent(s.getMessageId(), "allowed");
        continue;
      }
      Decision d =
          model.decide(
              new CapRequest(s.getUserId(), s.getMessageId(), now, policy, s.getChannel(), null));
      expected.putIfAbsent(s.getMessageId(), describe(d, policy));
    }
    return expected;
  }

  private Policy policyOf(long user) {
    return user <= VIPS ? policies.segments().get(0) : policies.defaultPolicy();
  }

  private static String describe(Suppression s) {
    return s.getReason()
        + " "
        + s.getCapWindow()
        + " "
        + s.getCapCount()
        + " "
        + (s.getNextEligibleAt() == null ? null : s.getNextEligibleAt().toEpochMilli());
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
      case NOT_A_REPLAY, KEY_REFUSED ->
          throw new IllegalStateException("the model decides no probe and refuses no key");
    };
  }

  /** Checks that no user's rolling window holds more checked, allowed sends than its cap. */
  void assertNoWindowHoldsMoreThanItsCap(List<Outcome> outcomes) {
    assertThat(outcomes).anyMatch(o -> o.detail() instanceof Delivery);
    assertThat(usersAboveACap(outcomes)).as("users with a window above its cap").isEmpty();
  }

  /**
   * The users whose deliveries (not transactional, not fail-open) put a window of their policy
   * above its cap, each with the first such window: what a lost log costs them.
   */
  Map<Long, String> usersAboveACap(List<Outcome> outcomes) {
    Map<Long, List<Long>> allowedTimes = new HashMap<>();
    Set<String> counted = new HashSet<>();
    for (Outcome o : outcomes) {
      if (o.detail() instanceof Delivery d
          && !d.getSend().getTransactional()
          && !d.getFailOpen()
          && counted.add(o.messageId())) {
        allowedTimes
            .computeIfAbsent(d.getSend().getUserId(), u -> new ArrayList<>())
            .add(d.getDecidedAt().toEpochMilli());
      }
    }
    Map<Long, String> above = new TreeMap<>();
    allowedTimes.forEach(
        (user, times) -> {
          List<Long> sorted = times.stream().sorted().toList();
          for (Cap cap : policyOf(user).caps()) {
            long w = cap.window().toMillis();
            for (long t : sorted) {
              long inside = sorted.stream().filter(x -> x > t - w && x <= t).count();
              if (inside > cap.limit()) {
                above.putIfAbsent(
                    user, cap.name() + ": " + inside + " sends in the window ending at " + t);
              }
            }
          }
        });
    return above;
  }

  /** The number of sends logged in the Redis at {@code uri}. */
  static long loggedSends(String uri) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      long total = 0;
      for (String key : c.sync().keys("s{*")) {
        total += c.sync().zcard(key);
      }
      return total;
    } finally {
      client.shutdown();
    }
  }

  /** The application settings of {@link #settings} with output topics suffixed. */
  static SendcapConfig config(Properties settings, String suffix) {
    Properties p = new Properties();
    p.putAll(settings);
    if (!suffix.isEmpty()) {
      p.setProperty("topic.deliveries", "deliveries" + suffix);
      p.setProperty("topic.suppressed", "suppressed" + suffix);
      p.setProperty("topic.dlq", "dlq" + suffix);
    }
    return SendcapConfig.from(p, p.getProperty("application.id"));
  }
}
