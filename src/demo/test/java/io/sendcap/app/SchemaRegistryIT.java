package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.core.instrument.Counter;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.cli.AvroJson;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.Cli;
import io.sendcap.testing.ConfluentWire;
import io.sendcap.testing.Suppressions;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code avro.serde=confluent} end to end, on a real broker, Redis and a real Schema Registry
 * (Apicurio, through its Confluent-compatible API): a campaign engine that registers its schema and
 * frames its sends as Confluent's serializers do, a delivery worker that decodes the outputs with
 * the schemas the registry holds under the ids in the records, and a registry that is down at
 * start-up, stops in the middle of a blast, or is down while sendcap stops.
 *
 * <p>Each test has a lane of its own: its topics, application id and Redis key prefix, so that it
 * decides its blast afresh, as the reference model of the rules does.
 */
class SchemaRegistryIT {
  private static final int USERS = 300;
  private static final int RESENT = 20;
  private static final Duration RETENTION = Duration.ofDays(1);
  private static final Duration TIMEOUT = Duration.ofMinutes(2);
  private static final String ERROR_MESSAGE = "__streams.errors.message";
  private static final Logger LOG = LoggerFactory.getLogger(SchemaRegistryIT.class);
  private static final HttpClient HTTP =
      HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();

  private static TestKafka kafka;
  private static EmbeddedRegistry registry;
  private static EmbeddedRedis redis;
  private static ConfluentWire wire;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();
  private final SingleObjectAvroSerde<ScheduledSend> singleObject =
      new SingleObjectAvroSerde<>(ScheduledSend.class);

  @BeforeAll
  static void start() throws IOException {
    CompletableFuture<EmbeddedRegistry> starting =
        CompletableFuture.supplyAsync(EmbeddedRegistry::start);
    try {
      kafka = TestKafka.start();
      redis = EmbeddedRedis.start();
    } finally {
      registry = starting.join();
    }
    wire = new ConfluentWire(registry.url());
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    for (AutoCloseable server : new AutoCloseable[] {registry, redis, kafka}) {
      try {
        if (server != null) {
          server.close();
        }
      } catch (Exception e) {
        throw new IllegalStateException("could not stop " + server, e);
      }
    }
  }

  /** A blast on a lane's input topic, and the sends it holds in order, bad records left out. */
  private record Blast(List<ProducerRecord<byte[], byte[]>> records, List<ScheduledSend> sends) {}

  /**
   * A blast of {@code count} records to {@link #USERS} users on the lane's input topic, some of
   * them a send produced again; {@code framing} makes the value of the {@code i}th send.
   */
  private Blast blast(
      String lane, int count, long seed, BiFunction<Integer, ScheduledSend, byte[]> framing) {
    List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
    List<ScheduledSend> sends = new ArrayList<>();
    List<ProducerRecord<byte[], byte[]>> generated =
        scenario.records(lane + "-sends", count, USERS, 0, RESENT, seed);
    for (int i = 0; i < generated.size(); i++) {
      ProducerRecord<byte[], byte[]> r = generated.get(i);
      ScheduledSend send = singleObject.decode(r.value());
      sends.add(send);
      records.add(
          new ProducerRecord<>(r.topic(), null, r.timestamp(), r.key(), framing.apply(i, send)));
    }
    return new Blast(records, sends);
  }

  private static void createTopics(String lane) {
    kafka.createTopics(
        4, lane + "-sends", lane + "-deliveries", lane + "-suppressed", lane + "-dlq");
  }

  /** The settings of the lane's application, reading and writing {@code serde}. */
  private static Properties settings(String lane, String serde) {
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), lane);
    p.setProperty("topic.input", lane + "-sends");
    p.setProperty("topic.deliveries", lane + "-deliveries");
    p.setProperty("topic.suppressed", lane + "-suppressed");
    p.setProperty("topic.dlq", lane + "-dlq");
    p.setProperty("cap.redis.key-prefix", lane);
    p.setProperty("avro.serde", serde);
    if (serde.equals("confluent")) {
      p.setProperty("schema.registry.url", registry.url());
    }
    return p;
  }

  private static TopicReader reader(String lane) {
    return new TopicReader(
        kafka.bootstrapServers(), lane + "-deliveries", lane + "-suppressed", lane + "-dlq");
  }

  /**
   * Runs a blast through a new application on the lane, and returns every output record it
   * committed, read once it has stopped.
   */
  private static List<ConsumerRecord<byte[], byte[]>> run(
      String lane, String serde, List<ProducerRecord<byte[], byte[]>> input) {
    createTopics(lane);
    try (TopicReader reader = reader(lane)) {
      try (SendcapApp app = SendcapApp.start(CapScenario.config(settings(lane, serde), ""))) {
        CapScenario.produce(kafka.bootstrapServers(), input);
        reader.awaitRecords(input.size(), TIMEOUT);
      }
      return reader.readToEndOnceNoTransactionIsOpen(TIMEOUT);
    }
  }

  /**
   * What sendcap made of each input record, read as a delivery worker reads the outputs: each
   * decoded with the schema the registry holds under the id in the record.
   */
  private List<CapScenario.Outcome> outcomes(
      String lane, List<ConsumerRecord<byte[], byte[]>> records) {
    List<CapScenario.Outcome> outcomes = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().equals(lane + "-deliveries")) {
        Delivery d = wire.decode(r.value(), Delivery.class);
        outcomes.add(new CapScenario.Outcome(d.getSend().getMessageId(), true, d));
      } else if (r.topic().equals(lane + "-suppressed")) {
        Suppression s = wire.decode(r.value(), Suppression.class);
        outcomes.add(new CapScenario.Outcome(s.getSend().getMessageId(), false, s));
      } else {
        outcomes.add(new CapScenario.Outcome(idOf(r.value()), false, "DLQ"));
      }
    }
    return outcomes;
  }

  /**
   * The message id of an input record in either framing, or, for one sendcap cannot read, the
   * record in Base64.
   */
  private String idOf(byte[] value) {
    if (value.length > 0 && value[0] == 0) {
      try {
        return wire.decode(value, ScheduledSend.class).getMessageId();
      } catch (RuntimeException e) {
        return "unreadable:" + Base64.getEncoder().encodeToString(value);
      }
    }
    return scenario.idOf(value);
  }

  /** Checks that every input record appears exactly once across the outputs and the DLQ. */
  private void assertEachInputOnce(
      List<ProducerRecord<byte[], byte[]>> input, List<CapScenario.Outcome> outcomes) {
    Map<String, Long> inputIds = new TreeMap<>();
    input.forEach(r -> inputIds.merge(idOf(r.value()), 1L, Long::sum));
    Map<String, Long> outputIds = new TreeMap<>();
    outcomes.forEach(o -> outputIds.merge(o.messageId(), 1L, Long::sum));
    assertThat(outputIds)
        .as("every input record appears exactly once across deliveries, suppressed and DLQ")
        .isEqualTo(inputIds);
  }

  /** Checks that each output's send is the input's, as sendcap's schema reads it. */
  private static void assertSendsCarriedThrough(
      List<ScheduledSend> sends, List<CapScenario.Outcome> outcomes) {
    Map<String, ScheduledSend> byId = new HashMap<>();
    sends.forEach(s -> byId.put(s.getMessageId(), s));
    for (CapScenario.Outcome o : outcomes) {
      ScheduledSend carried =
          o.detail() instanceof Delivery d
              ? d.getSend()
              : o.detail() instanceof Suppression s ? s.getSend() : null;
      if (carried != null) {
        assertThat(carried).as("the send of %s", o.messageId()).isEqualTo(byId.get(o.messageId()));
      }
    }
  }

  private static List<String> deadLetterReasons(List<ConsumerRecord<byte[], byte[]>> records) {
    return records.stream()
        .filter(r -> r.topic().endsWith("-dlq"))
        .map(
            r -> {
              Header h = r.headers().lastHeader(ERROR_MESSAGE);
              return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
            })
        .toList();
  }

  @Test
  void confluentFramedSendsAreDecidedExactlyAsTheSameBlastInSingleObjectEncoding() {
    int id = wire.register("confluent-sends-value", ScheduledSend.SCHEMA$);
    Blast framed = blast("confluent", 2_000, 31, (i, send) -> ConfluentWire.frame(id, send));
    Blast plain = blast("single", 2_000, 31, (i, send) -> singleObject.encode(send));
    assertThat(framed.sends()).isEqualTo(plain.sends());

    List<CapScenario.Outcome> single =
        scenario.outcomes(
            run("single", "single-object", plain.records()),
            "single-deliveries",
            "single-suppressed");
    List<ConsumerRecord<byte[], byte[]>> outputs = run("confluent", "confluent", framed.records());
    List<CapScenario.Outcome> confluent = outcomes("confluent", outputs);

    assertEachInputOnce(framed.records(), confluent);
    assertThat(CapScenario.allowedById(confluent))
        .as("allowed or suppressed, message id by message id")
        .isEqualTo(CapScenario.allowedById(single))
        .containsValues(true, false);
    scenario.assertDecisionsMatchTheModel(framed.sends(), confluent, RETENTION);
    scenario.assertDecisionsMatchTheModel(plain.sends(), single, RETENTION);
    assertSendsCarriedThrough(framed.sends(), confluent);
    assertThat(deadLetterReasons(outputs)).isEmpty();

    int deliveryId = wire.latestId("confluent-deliveries-value");
    int suppressionId = wire.latestId("confluent-suppressed-value");
    assertThat(wire.schema(deliveryId)).isEqualTo(Delivery.SCHEMA$);
    assertThat(wire.schema(suppressionId)).isEqualTo(Suppression.SCHEMA$);
    Map<String, Integer> idsByTopic =
        Map.of("confluent-deliveries", deliveryId, "confluent-suppressed", suppressionId);
    assertThat(outputs)
        .allSatisfy(
            r ->
                assertThat(ConfluentWire.schemaId(r.value()))
                    .as("schema id of a record of %s", r.topic())
                    .isEqualTo(idsByTopic.get(r.topic())));
  }

  @Test
  void sendsWrittenWithAnEvolvedSchemaAreDecidedAsTheRulesSay() {
    Schema evolved = ConfluentWire.scheduledSendWithPriority();
    int v1 = wire.register("evolved-sends-value", ScheduledSend.SCHEMA$);
    int v2 = wire.register("evolved-sends-value", evolved);
    assertThat(v2).isNotEqualTo(v1);
    Blast blast =
        blast(
            "evolved",
            1_500,
            32,
            (i, send) ->
                i % 3 == 0
                    ? ConfluentWire.frame(v1, send)
                    : ConfluentWire.frame(v2, ConfluentWire.withPriority(send, evolved, i % 5)));

    List<ConsumerRecord<byte[], byte[]>> outputs = run("evolved", "confluent", blast.records());
    List<CapScenario.Outcome> outcomes = outcomes("evolved", outputs);

    assertThat(deadLetterReasons(outputs)).isEmpty();
    assertEachInputOnce(blast.records(), outcomes);
    scenario.assertDecisionsMatchTheModel(blast.sends(), outcomes, RETENTION);
    assertSendsCarriedThrough(blast.sends(), outcomes);
  }

  @Test
  void anIncompatibleWriterAndAnUnknownSchemaIdGoToTheDeadLetterTopicAndThePipelineGoesOn() {
    String subject = "bad-sends-value";
    int v1 = wire.register(subject, ScheduledSend.SCHEMA$);
    Schema incompatible =
        SchemaBuilder.record("ScheduledSend")
            .namespace("io.sendcap.avro")
            .fields()
            .requiredString("messageId")
            .requiredString("userId")
            .endRecord();
    assertThat(wire.tryRegister(subject, incompatible).status())
        .as("refused under BACKWARD compatibility")
        .isEqualTo(409);
    // As a producer configured with another subject registers it. (Apicurio 2.6 applies its global
    // BACKWARD rule to a subject whose own compatibility is set to NONE.)
    int badId = wire.register("bad-other-value", incompatible);
    int unknownId = 999_999;
    Blast sends = blast("bad", 1_000, 33, (i, send) -> ConfluentWire.frame(v1, send));
    List<ProducerRecord<byte[], byte[]>> input = new ArrayList<>(sends.records());
    for (int k = 0; k < 10; k++) {
      GenericRecord bad = new GenericData.Record(incompatible);
      bad.put("messageId", "incompatible-" + k);
      bad.put("userId", "user-" + k);
      ProducerRecord<byte[], byte[]> at = input.get(100 * k + 50);
      input.add(
          100 * k + 50,
          new ProducerRecord<>(
              at.topic(), null, at.timestamp(), at.key(), ConfluentWire.frame(badId, bad)));
      byte[] unknown = ConfluentWire.frame(v1, sends.sends().get(100 * k + 60));
      ByteBuffer.wrap(unknown, 1, 4).putInt(unknownId);
      input.add(
          100 * k + 80, new ProducerRecord<>(at.topic(), null, at.timestamp(), at.key(), unknown));
    }

    List<ConsumerRecord<byte[], byte[]>> outputs = run("bad", "confluent", input);
    List<CapScenario.Outcome> outcomes = outcomes("bad", outputs);

    assertEachInputOnce(input, outcomes);
    List<String> reasons = deadLetterReasons(outputs);
    assertThat(reasons).hasSize(20);
    assertThat(reasons)
        .filteredOn(r -> r.contains("schema id " + badId + " "))
        .hasSize(10)
        .allSatisfy(
            r ->
                assertThat(r)
                    .contains("(topic bad-sends, subject bad-sends-value)")
                    .contains("that sendcap's schema cannot read")
                    .contains("userId is string in the writer's schema, long in sendcap's"));
    assertThat(reasons)
        .filteredOn(r -> r.contains("schema id " + unknownId + " "))
        .hasSize(10)
        .allSatisfy(
            r ->
                assertThat(r)
                    .startsWith("not a io.sendcap.avro.ScheduledSend sendcap can read")
                    .contains("answered 404 to GET /schemas/ids/" + unknownId));
    scenario.assertDecisionsMatchTheModel(
        sends.sends(),
        outcomes.stream().filter(o -> !"DLQ".equals(o.detail())).toList(),
        RETENTION);
  }

  @Test
  void aSendNestedDeeperThanTheBoundGoesToTheDeadLetterTopicAndEverySendAfterItIsDecided() {
    String subject = "deep-sends-value";
    int v1 = wire.register(subject, ScheduledSend.SCHEMA$);
    ConfluentWire.Answer accepted =
        wire.tryRegister(subject, ConfluentWire.scheduledSendWithRelated());
    assertThat(accepted.status()).as("accepted under BACKWARD compatibility").isEqualTo(200);
    int recursive = accepted.body().path("id").intValue();
    Blast sends = blast("deep", 400, 34, (i, send) -> ConfluentWire.frame(v1, send));
    List<ProducerRecord<byte[], byte[]>> input = new ArrayList<>(sends.records());
    ProducerRecord<byte[], byte[]> at = input.get(20);
    ScheduledSend deep =
        ScheduledSend.newBuilder(sends.sends().get(20)).setMessageId("deep").build();
    input.add(
        20,
        new ProducerRecord<>(
            at.topic(),
            null,
            at.timestamp(),
            at.key(),
            ConfluentWire.frameNested(recursive, deep, 200_000)));
    ScheduledSend shallow =
        ScheduledSend.newBuilder(sends.sends().get(200)).setMessageId("shallow").build();
    List<ScheduledSend> decided = new ArrayList<>(sends.sends());
    decided.add(200, shallow);
    input.add(
        201,
        new ProducerRecord<>(
            at.topic(),
            null,
            at.timestamp(),
            input.get(201).key(),
            ConfluentWire.frameNested(recursive, shallow, 10)));

    List<ConsumerRecord<byte[], byte[]>> outputs = run("deep", "confluent", input);

    List<String> reasons = deadLetterReasons(outputs);
    assertThat(reasons)
        .singleElement()
        .satisfies(
            r ->
                assertThat(r)
                    .contains("schema id " + recursive + " ")
                    .contains("nest more than avro.max-depth=64 deep"));
    List<CapScenario.Outcome> outcomes =
        outcomes("deep", outputs.stream().filter(r -> !r.topic().endsWith("-dlq")).toList());
    Map<String, Long> decidedIds = new TreeMap<>();
    outcomes.forEach(o -> decidedIds.merge(o.messageId(), 1L, Long::sum));
    Map<String, Long> expected = new TreeMap<>();
    decided.forEach(send -> expected.merge(send.getMessageId(), 1L, Long::sum));
    assertThat(decidedIds)
        .as("every ordinary send, before and after the deep one, decided once")
        .isEqualTo(expected);
  }

  @Test
  void aTopicMigratingFromSingleObjectToConfluentIsDecidedInFull() {
    int id = wire.register("migrating-sends-value", ScheduledSend.SCHEMA$);
    // single-object first, then both as instances of the campaign engine switch, then Confluent
    Blast blast =
        blast(
            "migrating",
            1_500,
            34,
            (i, send) ->
                i < 500 || (i < 1_000 && i % 2 == 0)
                    ? singleObject.encode(send)
                    : ConfluentWire.frame(id, send));

    List<ConsumerRecord<byte[], byte[]>> outputs = run("migrating", "confluent", blast.records());
    List<CapScenario.Outcome> outcomes = outcomes("migrating", outputs);

    assertThat(deadLetterReasons(outputs)).isEmpty();
    assertEachInputOnce(blast.records(), outcomes);
    scenario.assertDecisionsMatchTheModel(blast.sends(), outcomes, RETENTION);
  }

  @Test
  void startFailsWithinSecondsInOneLineNamingTheSettingWhenTheRegistryIsDown() throws IOException {
    createTopics("down");
    String url;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      url = "http://127.0.0.1:" + free.getLocalPort() + EmbeddedRegistry.CCOMPAT_PATH;
    }
    Properties p = settings("down", "confluent");
    p.setProperty("schema.registry.url", url);

    long started = System.nanoTime();
    Throwable failed = catchThrowable(() -> SendcapApp.start(CapScenario.config(p, "")));
    Duration took = Duration.ofNanos(System.nanoTime() - started);

    assertThat(failed).isInstanceOf(SendcapApp.StartupException.class);
    assertThat(failed.getMessage())
        .startsWith("cannot reach the schema registry (schema.registry.url): " + url + ": ")
        .doesNotContain("\n");
    assertThat(took).isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void aRegistryStoppedMidRunHoldsReadingBackUntilItAnswersAndNothingIsLostOrDeadLettered() {
    String lane = "outage";
    createTopics(lane);
    Schema evolved = ConfluentWire.scheduledSendWithPriority();
    int v1 = wire.register(lane + "-sends-value", ScheduledSend.SCHEMA$);
    int v2 = wire.register(lane + "-sends-value", evolved);
    int first = 1_000;
    int second = 3_500;
    // The first part and the start of the second are in v1 alone; then v2 mixes in, which sendcap
    // has not read before the registry stops: it must ask for it then, in the middle of deciding
    // the second part.
    Blast blast =
        blast(
            lane,
            4_000,
            35,
            (i, send) ->
                i < first + 2_000 || i % 2 == 0
                    ? ConfluentWire.frame(v1, send)
                    : ConfluentWire.frame(v2, ConfluentWire.withPriority(send, evolved, 1)));
    Properties p = settings(lane, "confluent");
    // Transactions that a registry outage outlasts, and commits far apart, so that one is most
    // likely open when reading stops.
    p.setProperty("producer.transaction.timeout.ms", "3000");
    p.setProperty("cap.redis.timeout.ms", "1000");
    p.setProperty("commit.interval.ms", "900");

    List<ConsumerRecord<byte[], byte[]>> outputs;
    try (TopicReader reader = reader(lane)) {
      try (SendcapApp app = SendcapApp.start(CapScenario.config(p, ""))) {
        int port = app.httpPort();
        List<ProducerRecord<byte[], byte[]>> input = blast.records();
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, first));
        reader.awaitRecords(first, TIMEOUT);

        registry.stop();
        CapScenario.produce(kafka.bootstrapServers(), input.subList(first, second));
        TopicReader.await(
            "the outage to show: a send waiting for the registry, or a stream thread failed",
            TIMEOUT,
            () -> registryUnavailable(app) || replaced(app) > 0);
        assertThat(replaced(app)).as("stream threads replaced for the outage").isZero();
        assertThat(status(port, "/health/live")).isEqualTo(200);
        assertThat(status(port, "/health/ready")).isEqualTo(503);
        int counted = (int) AppProgress.outputsCounted(app.metrics());
        int committed = reader.readToEnd(TIMEOUT).size();
        LOG.info(
            "reading stopped with {} decisions in a transaction still open", counted - committed);
        // The outage outlasts that transaction: the broker aborts it, and the thread finds its
        // producer fenced when it resumes.
        assertThat(reader.readToEndOnceNoTransactionIsOpen(TIMEOUT)).hasSize(committed);
        assertThat(registryUnavailable(app)).as("the outage, still reported").isTrue();

        registry.restart();
        TopicReader.await("reading to resume", TIMEOUT, () -> !registryUnavailable(app));
        CapScenario.produce(kafka.bootstrapServers(), input.subList(second, input.size()));
        reader.awaitRecords(input.size(), TIMEOUT);

        assertThat(app.metrics().get("sendcap.registry.outages").counter().count()).isEqualTo(1.0);
        assertThat(replaced(app)).as("stream threads replaced for the outage").isZero();
        assertThat(status(port, "/health/live")).isEqualTo(200);
        TopicReader.await(
            "readiness after the registry is back",
            TIMEOUT,
            () -> status(port, "/health/ready") == 200);
      }
      outputs = reader.readToEndOnceNoTransactionIsOpen(TIMEOUT);
    }

    List<CapScenario.Outcome> outcomes = outcomes(lane, outputs);
    assertThat(deadLetterReasons(outputs)).as("dead letters").isEmpty();
    assertEachInputOnce(blast.records(), outcomes);
    // The sends of the aborted transaction were decided again, as replays: a capped one against
    // the sends logged after it, so only its suppression's details may differ from the model's.
    scenario.assertSameSendsAllowedAsTheModel(blast.sends(), outcomes, RETENTION);
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
  }

  @Test
  void sendcapStoppedWhileASendWaitsForTheRegistryStopsAtOnceAndTheNextRunDecidesIt() {
    String lane = "stopping";
    createTopics(lane);
    Schema evolved = ConfluentWire.scheduledSendWithPriority();
    int v1 = wire.register(lane + "-sends-value", ScheduledSend.SCHEMA$);
    int v2 = wire.register(lane + "-sends-value", evolved);
    Blast blast =
        blast(
            lane,
            1_000,
            36,
            (i, send) ->
                i < 500 || i % 2 == 0
                    ? ConfluentWire.frame(v1, send)
                    : ConfluentWire.frame(v2, ConfluentWire.withPriority(send, evolved, 2)));
    Properties p = settings(lane, "confluent");
    // A stopped instance stays in its group until its session times out (45 s by default), and
    // the next run is assigned the partitions only then.
    p.setProperty("session.timeout.ms", "6000");
    p.setProperty("heartbeat.interval.ms", "1000");

    List<ConsumerRecord<byte[], byte[]>> outputs;
    try (TopicReader reader = reader(lane)) {
      SendcapApp first = SendcapApp.start(CapScenario.config(p, ""));
      Duration took;
      try {
        registry.stop();
        CapScenario.produce(kafka.bootstrapServers(), blast.records());
        TopicReader.await(
            "a send to wait for the registry", TIMEOUT, () -> registryUnavailable(first));
      } finally {
        long closing = System.nanoTime();
        first.close();
        took = Duration.ofNanos(System.nanoTime() - closing);
        registry.restart();
      }
      assertThat(took).as("time to stop").isLessThan(Duration.ofSeconds(20));
      assertThat(replaced(first)).as("stream threads replaced").isZero();

      try (SendcapApp second = SendcapApp.start(CapScenario.config(p, ""))) {
        reader.awaitRecords(blast.records().size(), TIMEOUT);
      }
      outputs = reader.readToEndOnceNoTransactionIsOpen(TIMEOUT);
    }

    List<CapScenario.Outcome> outcomes = outcomes(lane, outputs);
    assertThat(deadLetterReasons(outputs)).as("dead letters").isEmpty();
    assertEachInputOnce(blast.records(), outcomes);
    scenario.assertSameSendsAllowedAsTheModel(blast.sends(), outcomes, RETENTION);
  }

  /** {@code bin/sendcap}'s arguments for a command on the lane's topics, with {@code more}. */
  private static String[] cli(String lane, String command, String... more) {
    List<String> args =
        new ArrayList<>(
            List.of(
                command,
                "--config",
                "config/sendcap.properties",
                "--set",
                "bootstrap.servers=" + kafka.bootstrapServers(),
                "--set",
                "cap.redis.uri=" + redis.uri(),
                "--set",
                "topic.input=" + lane + "-sends",
                "--set",
                "topic.deliveries=" + lane + "-deliveries",
                "--set",
                "topic.suppressed=" + lane + "-suppressed",
                "--set",
                "topic.dlq=" + lane + "-dlq"));
    args.addAll(List.of(more));
    return args.toArray(String[]::new);
  }

  @Test
  void theToolsWriteTheConfiguredFramingAndReadBoth() throws IOException {
    String lane = "tools";
    createTopics(lane);
    String[] confluent = {
      "--set", "avro.serde=confluent", "--set", "schema.registry.url=" + registry.url()
    };
    Path sends = dir.resolve("tools-sends.jsonl");
    Files.write(
        sends,
        List.of(
            "{\"messageId\":\"a\",\"campaignId\":\"c\",\"userId\":7,\"channel\":\"EMAIL\","
                + "\"scheduledAt\":\"2026-11-22T10:00:00Z\"}",
            "{\"messageId\":\"b\",\"campaignId\":\"c\",\"userId\":8,\"channel\":\"PUSH\","
                + "\"scheduledAt\":\"2026-11-22T10:00:00Z\",\"attributes\":{\"lang\":\"de\"}}"),
        StandardCharsets.UTF_8);

    Cli.Result produced =
        Cli.run(
            concat(
                cli(lane, "produce", "--topic", lane + "-sends", "--file", sends.toString()),
                confluent));

    assertThat(produced.exit()).as(produced.err()).isZero();
    List<ConsumerRecord<byte[], byte[]>> written;
    try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), lane + "-sends")) {
      written = reader.readToEnd(TIMEOUT);
    }
    int id = wire.latestId(lane + "-sends-value");
    assertThat(written).hasSize(2);
    assertThat(written)
        .allSatisfy(
            r -> {
              assertThat(r.value()[0]).isEqualTo((byte) 0x00);
              assertThat(ConfluentWire.schemaId(r.value())).isEqualTo(id);
            });
    assertThat(
            written.stream().map(r -> wire.decode(r.value(), ScheduledSend.class).getMessageId()))
        .containsExactlyInAnyOrder("a", "b");

    Cli.Result consumed =
        Cli.run(
            concat(
                cli(
                    lane,
                    "consume",
                    "--topic",
                    lane + "-sends",
                    "--from-beginning",
                    "--json",
                    "--max",
                    "2"),
                confluent));
    assertThat(consumed.exit()).as(consumed.err()).isZero();
    assertThat(consumed.lines())
        .extracting(line -> new ObjectMapper().readTree(line).get("messageId").asText())
        .containsExactlyInAnyOrder("a", "b");

    Cli.Result noRegistry =
        Cli.run(cli(lane, "consume", "--topic", lane + "-sends", "--from-beginning", "--max", "1"));
    assertThat(noRegistry.exit()).isEqualTo(2);
    assertThat(noRegistry.err())
        .startsWith("sendcap: cannot read " + lane + "-sends ")
        .contains("in the Confluent wire format (schema id " + id + "): set schema.registry.url")
        .doesNotContain("\tat ");

    // A suppressed topic in both framings: one written in single-object encoding, two in
    // Confluent's.
    Instant at = Instant.parse("2026-11-22T10:00:00Z");
    Path single = dir.resolve("tools-single.jsonl");
    Path framed = dir.resolve("tools-framed.jsonl");
    Files.writeString(
        single,
        AvroJson.write(
                Suppressions.of(
                    "c", "active", Channel.EMAIL, SuppressionReason.CAP, "1d", false, at))
            + "\n");
    Files.write(
        framed,
        List.of(
            AvroJson.write(
                Suppressions.of(
                    "c", "active", Channel.EMAIL, SuppressionReason.CAP, "1d", false, at)),
            AvroJson.write(
                Suppressions.of(
                    "c", "active", Channel.EMAIL, SuppressionReason.CAP, "1d", false, at))));
    String suppressed = lane + "-suppressed";
    Cli.Result one =
        Cli.run(cli(lane, "produce", "--topic", suppressed, "--file", single.toString()));
    assertThat(one.exit()).as(one.err()).isZero();
    Cli.Result two =
        Cli.run(
            concat(
                cli(lane, "produce", "--topic", suppressed, "--file", framed.toString()),
                confluent));
    assertThat(two.exit()).as(two.err()).isZero();

    Cli.Result report = Cli.run(concat(cli(lane, "report", "--json"), confluent));
    assertThat(report.exit()).as(report.err()).isZero();
    assertThat(report.lines()).hasSize(1);
    JsonNode row = report.lastLineJson();
    assertThat(row.get("campaignId").asText()).isEqualTo("c");
    assertThat(row.get("count").asLong()).isEqualTo(3);

    Cli.Result reportNoRegistry = Cli.run(cli(lane, "report", "--json"));
    assertThat(reportNoRegistry.exit()).isEqualTo(1);
    assertThat(reportNoRegistry.err())
        .contains("2 of the records of " + suppressed + " could not be read as Suppressions")
        .contains("set schema.registry.url")
        .doesNotContain("\tat ");
  }

  private static String[] concat(String[] a, String[] b) {
    String[] all = new String[a.length + b.length];
    System.arraycopy(a, 0, all, 0, a.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }

  private static boolean registryUnavailable(SendcapApp app) {
    return app.metrics().get("sendcap.registry.unavailable").gauge().value() == 1.0;
  }

  private static double replaced(SendcapApp app) {
    return app.metrics().find("sendcap.stream.threads.replaced").counters().stream()
        .mapToDouble(Counter::count)
        .sum();
  }

  private static int status(int port, String path) {
    try {
      return HTTP.send(
              HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
              HttpResponse.BodyHandlers.discarding())
          .statusCode();
    } catch (IOException e) {
      throw new AssertionError("GET " + path + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
