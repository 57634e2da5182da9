package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.app.HostileBlast.Input;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.PolicyRecords;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.ConfluentWire;
import io.sendcap.testing.RegistryProxy;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile records on a real broker, Redis and Schema Registry, each in the middle of ordinary
 * sends: every ordinary send is decided once and as the reference model of the rules decides it,
 * every bad record is skipped or dead-lettered and counted with its reason, a registry that
 * throttles or refuses sendcap pauses the work (health saying why) without losing a send, and no
 * stream or global thread fails, also after a restart that restores the global stores.
 */
class HostileRecordsIT {
  private static final Instant T0 =
      Instant.now().truncatedTo(ChronoUnit.DAYS).plus(Duration.ofHours(8));
  private static final String SHA = "0".repeat(64);
  private static final Duration TIMEOUT = Duration.ofMinutes(2);
  private static final String MESSAGE = "__streams.errors.message";
  private static final String EXCEPTION = "__streams.errors.exception";
  private static final String OFFSET = "__streams.errors.offset";
  private static final String USER_INFO = "schema.registry.basic.auth.user.info";
  private static final long FOREIGN_USER = 150;

  private static final HttpClient HTTP =
      HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();

  private static TestKafka kafka;
  private static CompletableFuture<EmbeddedRegistry> registry;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);

  @BeforeAll
  static void start() throws Exception {
    registry = CompletableFuture.supplyAsync(EmbeddedRegistry::start);
    kafka = TestKafka.start();
    kafka.createTopics(1, "campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq");
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    try {
      EmbeddedRegistry started = registry.exceptionally(e -> null).join();
      if (started != null) {
        started.close();
      }
    } finally {
      kafka.close();
    }
  }

  /**
   * Records of the segments and policies topics that no version can be made of, published before
   * the application starts (so the global stores meet them while restoring) and while it runs.
   */
  private static void produceBadGlobalRecords(String segmentsTopic, String policiesTopic) {
    Map<String, Object> conf =
        Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(conf, new StringSerializer(), new ByteArraySerializer())) {
      for (String[] kv :
          new String[][] {
            {"evil", "{\"version\":1}"},
            {"vip", "not json"},
            {
              "vip",
              "{\"segment\":\"vip\",\"version\":99,\"chunks\":1,\"bytes\":-5,\"sha256\":\""
                  + SHA
                  + "\",\"cardinality\":1,\"publishedAt\":0}"
            },
            {
              "vip",
              "{\"segment\":\"vip\",\"version\":99,\"chunks\":1,\"bytes\":2147483000,\"sha256\":\""
                  + SHA
                  + "\",\"cardinality\":1,\"publishedAt\":0}"
            },
            {"vip/x/0", "chunk"},
          }) {
        producer.send(
            new ProducerRecord<>(segmentsTopic, kv[0], kv[1].getBytes(StandardCharsets.UTF_8)));
      }
      RecordHeaders nullSource = new RecordHeaders();
      nullSource.add(PolicyRecords.SOURCE_HEADER, null);
      producer.send(
          new ProducerRecord<>(
              policiesTopic,
              null,
              PolicyRecords.KEY,
              "default: {caps: [[]]}".getBytes(StandardCharsets.UTF_8),
              nullSource));
      producer.send(
          new ProducerRecord<>(
              policiesTopic,
              null,
              PolicyRecords.KEY,
              "[]".getBytes(StandardCharsets.UTF_8),
              nullSource));
      producer.flush();
    }
  }

  /** {@code count} sends, one to each user from {@code firstUser} on. */
  private List<ProducerRecord<byte[], byte[]>> ordinarySends(
      String prefix, long firstUser, int count) {
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      ScheduledSend send =
          ScheduledSend.newBuilder()
              .setMessageId(prefix + i)
              .setCampaignId("c1")
              .setUserId(firstUser + i)
              .setChannel(Channel.EMAIL)
              .setScheduledAt(T0.plusSeconds(i))
              .build();
      records.add(CapScenario.record("campaign-sends", send, sends.encode(send)));
    }
    return records;
  }

  private static double count(MeterRegistry metrics, String name, String reason) {
    Counter c = metrics.find(name).tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  @Test
  void badSegmentAndPolicyRecordsCostThemselvesOnlyAlsoAfterARestart() throws Exception {
    Properties settings =
        CapScenario.settings(
            dir, kafka.bootstrapServers(), "redis://127.0.0.1:1", "hostile-global");
    // A stopped instance stays in its group until its session times out (45 s by default), and the
    // restarted one is assigned the partition only then.
    settings.setProperty("session.timeout.ms", "6000");
    settings.setProperty("heartbeat.interval.ms", "1000");
    new PolicyTopic(CapScenario.config(settings, ""), Duration.ofSeconds(30)).ensureExists();
    produceBadGlobalRecords("segments", "policies");
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        TopicReader reader = new TopicReader(kafka.bootstrapServers(), "deliveries")) {
      settings.setProperty("cap.redis.uri", redis.uri());
      for (String run : List.of("first", "restarted")) {
        long firstUser = run.equals("first") ? 1_000 : 2_000;
        try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, ""))) {
          CapScenario.produce(kafka.bootstrapServers(), ordinarySends(run + "-", firstUser, 20));
          List<ConsumerRecord<byte[], byte[]>> out =
              reader.awaitRecords(run.equals("first") ? 20 : 40, Duration.ofMinutes(1));

          assertThat(out.subList(out.size() - 20, out.size()))
              .extracting(r -> deliveries.decode(r.value()).getSend().getMessageId().toString())
              .as("every ordinary send of the %s run delivered once", run)
              .containsExactlyInAnyOrderElementsOf(
                  ordinarySends(run + "-", firstUser, 20).stream()
                      .map(r -> sends.decode(r.value()).getMessageId().toString())
                      .toList());
          MeterRegistry m = app.metrics();
          assertThat(count(m, "sendcap.segments.rejected", "invalid")).isEqualTo(2);
          assertThat(count(m, "sendcap.segments.rejected", "malformed")).isEqualTo(2);
          assertThat(count(m, "sendcap.segments.rejected", "too-large")).isEqualTo(1);
          assertThat(count(m, "sendcap.policies.rejected", "invalid")).isEqualTo(2);
          assertThat(app.segments().version("vip")).isEqualTo(1);
          assertThat(m.find("sendcap.stream.threads.replaced").counters())
              .as("stream threads replaced")
              .isEmpty();
          assertThat(app.state().isRunningOrRebalancing()).isTrue();
        }
      }
    }
  }

  private static Properties hostileSettings(String lane, String redisUri, String registryUrl) {
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redisUri, lane);
    p.setProperty("topic.input", lane + "-sends");
    p.setProperty("topic.deliveries", lane + "-deliveries");
    p.setProperty("topic.suppressed", lane + "-suppressed");
    p.setProperty("topic.dlq", lane + "-dlq");
    p.setProperty("topic.segments", lane + "-segments");
    p.setProperty("topic.policies", lane + "-policies");
    p.setProperty("avro.serde", "confluent");
    p.setProperty("schema.registry.url", registryUrl);
    // Longer than the registry makes a send wait here, so that no transaction is aborted and each
    // send is decided once, at its first try, as the model decides it.
    p.setProperty("producer.transaction.timeout.ms", "60000");
    return p;
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static HttpResponse<String> get(int port, String path) {
    try {
      return HTTP.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
              .timeout(Duration.ofSeconds(10))
              .build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new AssertionError("GET " + path + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  private static double replaced(MeterRegistry metrics) {
    return metrics.find("sendcap.stream.threads.replaced").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  /**
   * Every kind of bad record a producer, an operator's tool, the registry or Redis can give
   * sendcap, in the middle of a blast of 2,000 ordinary sends on one input partition under {@code
   * avro.serde=confluent}: garbage bytes, an unknown schema id, a 3 MB send compressed with gzip, a
   * recursive writer schema nested 200,000 deep, sends scheduled far ahead under {@code
   * cap.clock=event}, a campaign id of 300 characters, a user whose Redis key another application
   * wrote, records of the segments and policies topics no version can be made of; and a registry
   * (behind a proxy) that throttles one schema id, answers garbage for another and refuses sendcap
   * a third for a while. Every ordinary send is decided once and as the reference model says, every
   * bad record is dead-lettered once with its reason or skipped and counted, health says why the
   * work pauses while the registry refuses sendcap, and no stream thread is replaced.
   */
  @Test
  void everyKindOfBadRecordInABlastCostsItselfOnlyAndEveryOrdinarySendIsDecidedAsTheModelSays()
      throws Exception {
    String lane = "hostile";
    kafka.createTopics(
        1, lane + "-sends", lane + "-deliveries", lane + "-suppressed", lane + "-dlq");
    CapScenario.publishSegments(kafka.bootstrapServers(), lane + "-segments");
    EmbeddedRegistry real = registry.join();
    ConfluentWire wire = new ConfluentWire(real.url());
    HostileBlast.SchemaIds ids = HostileBlast.register(wire, lane + "-sends-value");
    List<Input> blast = HostileBlast.build(lane + "-sends", ids);
    Set<String> foreignIds =
        blast.stream()
            .filter(in -> !in.bad() && in.send().getUserId() == FOREIGN_USER)
            .filter(in -> !in.send().getTransactional())
            .map(Input::label)
            .collect(Collectors.toSet());
    assertThat(foreignIds).isNotEmpty();

    Map<Long, Input> byOffset = new HashMap<>();
    List<ConsumerRecord<byte[], byte[]>> outputs;
    Duration retention;
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        RegistryProxy proxy = RegistryProxy.start(real.url());
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(),
                lane + "-deliveries",
                lane + "-suppressed",
                lane + "-dlq")) {
      redis.call("SET", "s{" + FOREIGN_USER + "}", "written by another application");
      proxy.throttle(ids.throttled(), 3);
      proxy.garble(ids.garbled());
      proxy.refuse(ids.refused());
      Properties settings = hostileSettings(lane, redis.uri(), proxy.url());
      retention = CapScenario.config(settings, "").limiter().idempotencyRetention();
      new PolicyTopic(CapScenario.config(settings, ""), Duration.ofSeconds(30)).ensureExists();
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings, ""))) {
        int port = app.httpPort();
        int half = blast.size() / 2;
        byOffset.putAll(HostileBlast.produce(kafka.bootstrapServers(), blast.subList(0, half)));
        produceBadGlobalRecords(lane + "-segments", lane + "-policies");
        byOffset.putAll(
            HostileBlast.produce(kafka.bootstrapServers(), blast.subList(half, blast.size())));

        TopicReader.await(
            "/health/ready to name the setting while the registry refuses sendcap",
            TIMEOUT,
            () -> {
              HttpResponse<String> ready = get(port, "/health/ready");
              return ready.statusCode() == 503 && ready.body().contains(USER_INFO);
            });
        assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);
        proxy.admit(ids.refused());

        reader.awaitRecords(blast.size(), TIMEOUT);
        MeterRegistry m = app.metrics();
        TopicReader.await(
            "the bad segments and policies records counted",
            TIMEOUT,
            () ->
                count(m, "sendcap.segments.rejected", "invalid") == 2
                    && count(m, "sendcap.segments.rejected", "malformed") == 2
                    && count(m, "sendcap.segments.rejected", "too-large") == 1
                    && count(m, "sendcap.policies.rejected", "invalid") == 2);
        TopicReader.await(
            "/health/ready once the registry admits sendcap",
            TIMEOUT,
            () -> get(port, "/health/ready").statusCode() == 200);
        assertThat(get(port, "/health/live").statusCode()).isEqualTo(200);

        String deadLetters = "sendcap.sends.dead.letters";
        assertThat(count(m, deadLetters, "unreadable")).as("unreadable").isEqualTo(4);
        assertThat(count(m, deadLetters, "invalid")).as("invalid").isEqualTo(3);
        assertThat(count(m, deadLetters, "too-large")).as("too-large").isEqualTo(1);
        assertThat(count(m, deadLetters, "unwritable")).as("unwritable").isZero();
        assertThat(count(m, deadLetters, "redis-key"))
            .as("redis-key")
            .isEqualTo(blast.stream().filter(in -> foreignIds.contains(in.label())).count());
        assertThat(m.get("sendcap.registry.outages").counter().count())
            .as("waits for the registry: the throttled id's and the refused id's, no other")
            .isEqualTo(2);
        assertThat(proxy.lookups(ids.throttled()))
            .as("lookups of the throttled id: three refused, then answered")
            .isGreaterThanOrEqualTo(4);
        assertThat(proxy.lookups(ids.refused())).as("lookups of the refused id").isGreaterThan(1);
        assertThat(app.segments().version("vip")).isEqualTo(1);
        assertThat(m.find("sendcap.stream.threads.replaced").counters())
            .as("stream threads replaced")
            .isEmpty();
        assertThat(replaced(m)).isZero();
        assertThat(app.state().isRunningOrRebalancing()).isTrue();
        assertThat(redis.call("GET", "s{" + FOREIGN_USER + "}"))
            .as("the foreign key, untouched")
            .contains("written by another application");
      }
      outputs = reader.readToEndOnceNoTransactionIsOpen(TIMEOUT);
    }

    assertThat(byOffset).hasSize(blast.size());
    List<CapScenario.Outcome> decided =
        assertEachInputOnceAndEachDeadLetterWithItsReason(
            lane, wire, outputs, blast, byOffset, foreignIds);
    List<ScheduledSend> decidable =
        blast.stream()
            .filter(in -> !in.bad() && !foreignIds.contains(in.label()))
            .map(Input::send)
            .toList();
    scenario.assertDecisionsMatchTheModel(decidable, decided, retention);
    assertThat(CapScenario.allowedById(decided)).containsValues(true, false);
  }

  /**
   * Checks that every input record of {@code blast} appears exactly once across the lane's outputs,
   * that the dead letters are the bad records and the sends of the user whose Redis key is foreign,
   * each with its reason, the exception it names and its input's bytes (the too-large one without
   * them); returns the decisions of the ordinary sends.
   */
  private static List<CapScenario.Outcome> assertEachInputOnceAndEachDeadLetterWithItsReason(
      String lane,
      ConfluentWire wire,
      List<ConsumerRecord<byte[], byte[]>> outputs,
      List<Input> blast,
      Map<Long, Input> byOffset,
      Set<String> foreignIds) {
    List<CapScenario.Outcome> decided = new ArrayList<>();
    Map<String, Long> outputLabels = new TreeMap<>();
    Map<String, Long> deadLabels = new TreeMap<>();
    Map<String, String> exceptions = new TreeMap<>();
    for (ConsumerRecord<byte[], byte[]> r : outputs) {
      if (r.topic().equals(lane + "-deliveries")) {
        Delivery d = wire.decode(r.value(), Delivery.class);
        decided.add(new CapScenario.Outcome(d.getSend().getMessageId(), true, d));
        outputLabels.merge(d.getSend().getMessageId(), 1L, Long::sum);
      } else if (r.topic().equals(lane + "-suppressed")) {
        Suppression s = wire.decode(r.value(), Suppression.class);
        decided.add(new CapScenario.Outcome(s.getSend().getMessageId(), false, s));
        outputLabels.merge(s.getSend().getMessageId(), 1L, Long::sum);
      } else {
        Input in = byOffset.get(Long.parseLong(header(r, OFFSET)));
        assertThat(in).as("the input of a dead letter at offset %s", header(r, OFFSET)).isNotNull();
        outputLabels.merge(in.label(), 1L, Long::sum);
        deadLabels.merge(in.label(), 1L, Long::sum);
        String message = header(r, MESSAGE);
        if (in.bad()) {
          assertThat(message).as("the reason of %s", in.label()).contains(in.reason());
        } else {
          assertThat(message)
              .as("the reason of %s", in.label())
              .startsWith("Redis cannot use the key of user " + FOREIGN_USER)
              .contains("WRONGTYPE");
        }
        String counted = in.bad() ? in.counted() : "redis-key";
        exceptions.put(in.label(), header(r, EXCEPTION));
        if (counted.equals("too-large")) {
          assertThat(r.value()).as("the dead letter of %s, without its body", in.label()).isNull();
          assertThat(r.serializedKeySize() + r.serializedValueSize()).isLessThan(100);
        } else {
          assertThat(r.value())
              .as("the dead letter of %s, its input as it was", in.label())
              .isEqualTo(in.record().value());
        }
      }
    }

    Map<String, Long> inputLabels = new TreeMap<>();
    Map<String, Long> expectedDead = new TreeMap<>();
    Map<String, String> expectedExceptions = new TreeMap<>();
    for (Input in : blast) {
      inputLabels.merge(in.label(), 1L, Long::sum);
      if (in.bad() || foreignIds.contains(in.label())) {
        expectedDead.merge(in.label(), 1L, Long::sum);
        expectedExceptions.put(
            in.label(), HostileBlast.EXCEPTIONS.get(in.bad() ? in.counted() : "redis-key"));
      }
    }
    assertThat(exceptions).as("the exception each dead letter names").isEqualTo(expectedExceptions);
    assertThat(outputLabels)
        .as("every input record appears exactly once across deliveries, suppressed and DLQ")
        .isEqualTo(inputLabels);
    assertThat(deadLabels)
        .as("the bad records and the foreign key's user's sends, each dead-lettered once")
        .isEqualTo(expectedDead);
    return decided;
  }
}
