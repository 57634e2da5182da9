package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.QuotaCounters;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.ConfluentAvroSerde;
import io.sendcap.serde.SchemaRegistryClient;
import io.sendcap.serde.SchemaRegistrySettings;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.ConfluentWire;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The topology under {@code avro.serde=confluent} against an in-process registry: sends in the
 * Confluent wire format (and in single-object encoding, for a topic that migrates) are decided, the
 * outputs are framed with the ids of the schemas registered under {@code deliveries-value} and
 * {@code suppressed-value}, and records that cannot be read go to the dead-letter topic with the
 * reason, unless the registry could not be asked.
 */
class ConfluentTopologyTest {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");
  private static final String POLICIES =
      """
      default:
        caps:
          - {window: 1d, limit: 1}
      """;

  private final FakeSchemaRegistry registry;
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final ConfluentAvroSerde<ScheduledSend> engine;
  private RegistryOutage outage = RegistryOutage.NONE;
  private TopologyTestDriver driver;
  private TestInputTopic<byte[], byte[]> input;
  private TestOutputTopic<byte[], byte[]> delivered;
  private TestOutputTopic<byte[], byte[]> suppressed;
  private TestOutputTopic<byte[], byte[]> dlq;

  ConfluentTopologyTest() throws IOException {
    registry = new FakeSchemaRegistry();
    engine =
        new ConfluentAvroSerde<>(
            ScheduledSend.class,
            new SchemaRegistryClient(SchemaRegistrySettings.of(registry.url())),
            true,
            false);
    Properties props = new Properties();
    props.setProperty("bootstrap.servers", "unused:9092");
    props.setProperty("cap.clock", "event");
    // TopologyTestDriver drops dead-letter records under exactly_once_v2.
    props.setProperty("processing.guarantee", "at_least_once");
    props.setProperty("batch.max.records", "1");
    props.setProperty("avro.serde", "confluent");
    props.setProperty("schema.registry.url", registry.url());
    SendcapConfig config = SendcapConfig.from(props, "test");
    LivePolicies policies = new LivePolicies(Policies.parse(POLICIES, "test"), "test");
    driver =
        new TopologyTestDriver(
            SendcapTopology.build(
                config,
                policies,
                new SegmentRegistry(policies.current().policies().segmentNames()),
                () -> new SlidingLogModel(Duration.ZERO),
                new GlobalQuotas(
                    new QuotaCounters(),
                    "s",
                    InstantSource.fixed(T0),
                    Duration.ofSeconds(5),
                    metrics),
                InstantSource.fixed(T0),
                Backpressure.NONE,
                new RegistryOutage() {
                  @Override
                  public void await(SchemaRegistryUnavailableException cause, int failures) {
                    outage.await(cause, failures);
                  }

                  @Override
                  public void answered() {
                    outage.answered();
                  }
                },
                new Undecided(metrics),
                metrics),
            SendcapTopology.streamsProperties(config));
    ByteArraySerializer ser = new ByteArraySerializer();
    ByteArrayDeserializer de = new ByteArrayDeserializer();
    input = driver.createInputTopic("campaign-sends", ser, ser);
    delivered = driver.createOutputTopic("deliveries", de, de);
    suppressed = driver.createOutputTopic("suppressed", de, de);
    dlq = driver.createOutputTopic("campaign-sends-dlq", de, de);
  }

  @AfterEach
  void close() {
    driver.close();
    registry.close();
  }

  private static ScheduledSend send(String id, long user) {
    return ScheduledSend.newBuilder()
        .setMessageId(id)
        .setCampaignId("c1")
        .setUserId(user)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(T0)
        .build();
  }

  private void pipe(long user, byte[] value) {
    input.pipeInput(String.valueOf(user).getBytes(StandardCharsets.UTF_8), value, T0);
  }

  private <T extends org.apache.avro.specific.SpecificRecord> ConfluentAvroSerde<T> worker(
      Class<T> type) {
    return new ConfluentAvroSerde<>(
        type, new SchemaRegistryClient(SchemaRegistrySettings.of(registry.url())), false, false);
  }

  private List<String> deliveredIds() {
    driver.advanceWallClockTime(Duration.ofMillis(500));
    ConfluentAvroSerde<Delivery> worker = worker(Delivery.class);
    return delivered.readValuesToList().stream()
        .map(b -> worker.decode("deliveries", b).getSend().getMessageId())
        .toList();
  }

  private List<String> deadLetterReasons() {
    driver.advanceWallClockTime(Duration.ofMillis(500));
    return dlq.readRecordsToList().stream().map(ConfluentTopologyTest::reason).toList();
  }

  private static String reason(TestRecord<byte[], byte[]> record) {
    Header h = record.headers().lastHeader("__streams.errors.message");
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static byte[] framed(int id, Schema schema, GenericRecord record) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(5).put((byte) 0).putInt(id).array());
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(schema).write(record, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  @Test
  void decidesConfluentFramedSendsAndFramesTheOutputsWithTheirRegisteredIds() {
    pipe(1, engine.encode("campaign-sends", send("a", 1)));
    pipe(1, engine.encode("campaign-sends", send("b", 1)));

    driver.advanceWallClockTime(Duration.ofMillis(500));
    List<byte[]> deliveries = delivered.readValuesToList();
    List<byte[]> suppressions = suppressed.readValuesToList();
    assertThat(deliveries).hasSize(1);
    assertThat(suppressions).hasSize(1);
    int deliveryId = registry.versions("deliveries-value").get(0);
    int suppressionId = registry.versions("suppressed-value").get(0);
    assertThat(deliveries.get(0)).startsWith(ByteBuffer.allocate(5).putInt(1, deliveryId).array());
    assertThat(suppressions.get(0))
        .startsWith(ByteBuffer.allocate(5).putInt(1, suppressionId).array());
    assertThat(worker(Delivery.class).decode("deliveries", deliveries.get(0)).getSend())
        .isEqualTo(send("a", 1));
    Suppression capped = worker(Suppression.class).decode("suppressed", suppressions.get(0));
    assertThat(capped.getSend().getMessageId()).isEqualTo("b");
    assertThat(capped.getReason()).isEqualTo(SuppressionReason.CAP);
    assertThat(new Schema.Parser().parse(registry.schema(deliveryId).orElseThrow()))
        .isEqualTo(Delivery.SCHEMA$);
  }

  @Test
  void aTopicMixingBothFramingsIsDecidedAsOne() {
    pipe(1, new SingleObjectAvroSerde<>(ScheduledSend.class).encode(send("old", 1)));
    pipe(2, engine.encode("campaign-sends", send("new", 2)));
    pipe(1, engine.encode("campaign-sends", send("new-capped", 1)));

    assertThat(deliveredIds()).containsExactly("old", "new");
    assertThat(suppressed.readValuesToList()).hasSize(1);
    assertThat(deadLetterReasons()).isEmpty();
  }

  @Test
  void anEvolvedWriterIsDecidedAndAnUnknownIdOrIncompatibleWriterGoesToTheDeadLetterTopic()
      throws IOException {
    List<Schema.Field> added = new java.util.ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      added.add(new Schema.Field(f, f.schema()));
    }
    added.add(
        new Schema.Field(
            "priority",
            SchemaBuilder.unionOf().nullType().and().intType().endUnion(),
            null,
            Schema.Field.NULL_DEFAULT_VALUE));
    Schema evolved = Schema.createRecord("ScheduledSend", null, "io.sendcap.avro", false, added);
    int evolvedId = registry.register("campaign-sends-value", evolved);
    GenericRecord record = new GenericData.Record(evolved);
    ScheduledSend v1 = send("evolved", 3);
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      record.put(f.name(), v1.get(f.name()));
    }
    record.put("scheduledAt", T0.toEpochMilli());
    record.put("channel", new GenericData.EnumSymbol(evolved.getField("channel").schema(), "SMS"));
    record.put("priority", 1);

    pipe(3, framed(evolvedId, evolved, record));
    pipe(4, ByteBuffer.allocate(8).put((byte) 0).putInt(4242).array());
    Schema other =
        SchemaBuilder.record("ScheduledSend")
            .namespace("io.sendcap.avro")
            .fields()
            .requiredString("messageId")
            .requiredString("userId")
            .endRecord();
    int otherId = registry.register("campaign-sends-value", other);
    GenericRecord bad = new GenericData.Record(other);
    bad.put("messageId", "m");
    bad.put("userId", "five");
    pipe(5, framed(otherId, other, bad));
    pipe(6, engine.encode("campaign-sends", send("after", 6)));

    assertThat(deliveredIds()).containsExactly("evolved", "after");
    List<String> reasons = deadLetterReasons();
    assertThat(reasons).hasSize(2);
    assertThat(reasons.get(0))
        .startsWith(
            "not a io.sendcap.avro.ScheduledSend sendcap can read: schema id 4242 (topic"
                + " campaign-sends, subject campaign-sends-value): the schema registry at ")
        .endsWith("answered 404 to GET /schemas/ids/4242: error_code 40403, Schema 4242 not found");
    assertThat(reasons.get(1))
        .startsWith("a io.sendcap.avro.ScheduledSend written with schema id " + otherId)
        .endsWith(
            "that sendcap's schema cannot read: campaignId is missing; channel is missing;"
                + " scheduledAt is missing; userId is string in the writer's schema, long in"
                + " sendcap's");
  }

  @Test
  void aSendThatWaitsForTheRegistryIsReadOnceItAnswersAndAnUnknownIdThenGoesToTheDeadLetterTopic() {
    pipe(1, engine.encode("campaign-sends", send("a", 1)));
    assertThat(deliveredIds()).containsExactly("a");
    registry.unavailable(true);
    Schema evolved = ConfluentWire.scheduledSendWithPriority();
    int unseen = registry.register("campaign-sends-value", evolved);
    List<String> events = new java.util.ArrayList<>();
    outage =
        new RegistryOutage() {
          @Override
          public void await(SchemaRegistryUnavailableException cause, int failures) {
            events.add("failed " + failures);
            registry.unavailable(failures < 3);
          }

          @Override
          public void answered() {
            events.add("answered");
          }
        };

    ScheduledSend b = send("b", 2);
    pipe(2, ConfluentWire.frame(unseen, ConfluentWire.withPriority(b, evolved, 1)));
    assertThat(events).containsExactly("failed 1", "failed 2", "failed 3", "answered");
    events.clear();
    registry.unavailable(true);
    pipe(3, ByteBuffer.allocate(8).put((byte) 0).putInt(4242).array());

    assertThat(events).containsExactly("failed 1", "failed 2", "failed 3", "answered");
    assertThat(deliveredIds()).containsExactly("b");
    assertThat(deadLetterReasons())
        .singleElement()
        .asString()
        .contains("answered 404 to GET /schemas/ids/4242");
  }

  @Test
  void aSendThatCannotBeReadForWantOfTheRegistryIsNotADeadLetter() {
    pipe(1, engine.encode("campaign-sends", send("a", 1)));
    assertThat(deliveredIds()).containsExactly("a");
    registry.unavailable(true);
    int unseen = registry.register("campaign-sends-value", Delivery.SCHEMA$);

    Throwable failed =
        catchThrowable(() -> pipe(2, ByteBuffer.allocate(8).put((byte) 0).putInt(unseen).array()));

    assertThat(failed).hasRootCauseInstanceOf(SchemaRegistryUnavailableException.class);
    assertThat(dlq.readRecordsToList()).isEmpty();
  }
}
