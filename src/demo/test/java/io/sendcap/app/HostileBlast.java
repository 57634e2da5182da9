package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.Policies;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.ConfluentWire;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.avro.Schema;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The input of {@code HostileRecordsIT}'s combined proof: 2,000 ordinary sends in the Confluent
 * framing with one bad record of each kind a producer can write among them, each record labelled
 * with what sendcap must make of it, and how to produce them so that each is known by its offset.
 */
final class HostileBlast {
  /** How many users the ordinary sends go to. */
  static final int USERS = 300;

  /** A schema id the registry does not know. */
  static final int UNKNOWN_ID = 999_999;

  /** The exception each dead-letter reason names in {@code __streams.errors.exception}. */
  static final Map<String, String> EXCEPTIONS =
      Map.of(
          "unreadable", "io.sendcap.serde.UnreadableRecordException",
          "too-large", "io.sendcap.topology.SendTooLargeException",
          "invalid", "io.sendcap.topology.InvalidSendException",
          "redis-key", "io.sendcap.topology.InvalidSendException");

  private HostileBlast() {}

  /**
   * One record of a hostile blast: an ordinary send ({@code send} set, {@code label} its message
   * id), or a bad record ({@code label} naming it) with the dead-letter reason counted for it and
   * what its {@code __streams.errors.message} header must hold.
   */
  record Input(
      ProducerRecord<byte[], byte[]> record,
      String label,
      ScheduledSend send,
      String counted,
      String reason) {
    static Input ordinary(ProducerRecord<byte[], byte[]> record, ScheduledSend send) {
      return new Input(record, send.getMessageId(), send, null, null);
    }

    boolean bad() {
      return send == null;
    }
  }

  /** The schema ids of the hostile blast, all registered in the real registry. */
  record SchemaIds(
      int v1,
      int throttled,
      Schema throttledSchema,
      int garbled,
      Schema garbledSchema,
      int refused,
      Schema refusedSchema,
      int recursive) {}

  /** ScheduledSend with one more optional string field, {@code name}: a BACKWARD change. */
  private static Schema withOptionalField(String name) {
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      fields.add(new Schema.Field(f, f.schema()));
    }
    fields.add(
        new Schema.Field(
            name,
            Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.STRING)),
            null,
            Schema.Field.NULL_DEFAULT_VALUE));
    Schema s = ScheduledSend.SCHEMA$;
    return Schema.createRecord(s.getName(), s.getDoc(), s.getNamespace(), false, fields);
  }

  /**
   * Registers under {@code subject} sendcap's schema, three BACKWARD-compatible variants (for the
   * ids the proxy throttles, garbles and refuses) and the recursive one, and returns their ids.
   */
  static SchemaIds register(ConfluentWire wire, String subject) {
    Schema throttled = withOptionalField("throttledBy");
    Schema garbled = withOptionalField("garbledBy");
    Schema refused = withOptionalField("refusedBy");
    int v1 = wire.register(subject, ScheduledSend.SCHEMA$);
    int throttledId = wire.register(subject, throttled);
    int garbledId = wire.register(subject, garbled);
    int refusedId = wire.register(subject, refused);
    int recursive = wire.register(subject, ConfluentWire.scheduledSendWithRelated());
    assertThat(Set.of(v1, throttledId, garbledId, refusedId, recursive)).hasSize(5);
    return new SchemaIds(
        v1, throttledId, throttled, garbledId, garbled, refusedId, refused, recursive);
  }

  /** A send that is not part of the blast's decisions, to carry a bad value. */
  private static ScheduledSend.Builder odd(String messageId) {
    return ScheduledSend.newBuilder()
        .setMessageId(messageId)
        .setCampaignId("c1")
        .setUserId(5_000)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(CapScenario.T0);
  }

  private static Input bad(String topic, String label, String counted, String reason, byte[] v) {
    return bad(topic, null, label, counted, reason, v);
  }

  private static Input bad(
      String topic, Long timestamp, String label, String counted, String reason, byte[] value) {
    byte[] key = "5000".getBytes(StandardCharsets.UTF_8);
    return new Input(
        new ProducerRecord<>(topic, null, timestamp, key, value), label, null, counted, reason);
  }

  /**
   * The bad records of the hostile blast, by the index of the ordinary send they follow: one of
   * each kind that a producer can put on the input topic.
   */
  private static Map<Integer, Input> badRecords(String topic, SchemaIds ids) {
    Map<Integer, Input> bad = new LinkedHashMap<>();
    bad.put(
        100,
        bad(
            topic,
            "garbage",
            "unreadable",
            "not a io.sendcap.avro.ScheduledSend",
            "garbage: not Avro, in no framing".getBytes(StandardCharsets.UTF_8)));
    byte[] unknown = ConfluentWire.frame(ids.v1(), odd("unknown-id").build());
    ByteBuffer.wrap(unknown, 1, 4).putInt(UNKNOWN_ID);
    bad.put(
        200,
        bad(
            topic,
            "unknown-id",
            "unreadable",
            "answered 404 to GET /schemas/ids/" + UNKNOWN_ID,
            unknown));
    ScheduledSend big =
        odd("too-large").setAttributes(Map.of("body", "x".repeat(3_000_000))).build();
    bad.put(
        400,
        bad(
            topic,
            "too-large",
            "too-large",
            "more than cap.max-send-bytes=",
            ConfluentWire.frame(ids.v1(), big)));
    bad.put(
        500,
        bad(
            topic,
            "deep",
            "unreadable",
            "nest more than avro.max-depth=64 deep",
            ConfluentWire.frameNested(ids.recursive(), odd("deep").build(), 200_000)));
    bad.put(
        600,
        bad(
            topic,
            "garbled",
            "unreadable",
            "with a body that is not JSON",
            ConfluentWire.frame(
                ids.garbled(), ConfluentWire.as(odd("garbled").build(), ids.garbledSchema()))));
    Instant year2100 = Instant.parse("2100-01-01T00:00:00Z");
    bad.put(
        800,
        bad(
            topic,
            "far-future",
            "invalid",
            "scheduledAt " + year2100 + " is more than cap.max-skew.ms=604800000 from the record's",
            ConfluentWire.frame(ids.v1(), odd("far-future").setScheduledAt(year2100).build())));
    // Stamped as far ahead as a broker takes (an hour), scheduled just within cap.max-skew.ms of
    // that stamp: past this instance's clock plus cap.max-skew.ms.
    Instant now = Instant.now();
    Instant ahead = now.plus(Duration.ofDays(7)).plus(Duration.ofMinutes(30));
    bad.put(
        900,
        bad(
            topic,
            now.plus(Duration.ofMinutes(50)).toEpochMilli(),
            "ahead",
            "invalid",
            "ahead of this instance's clock",
            ConfluentWire.frame(ids.v1(), odd("ahead").setScheduledAt(ahead).build())));
    bad.put(
        1_000,
        bad(
            topic,
            "long-campaign",
            "invalid",
            "campaignId has 300 characters, more than " + Policies.MAX_CAMPAIGN_ID,
            ConfluentWire.frame(
                ids.v1(), odd("long-campaign").setCampaignId("c".repeat(300)).build())));
    return bad;
  }

  /**
   * The hostile blast: 2,000 ordinary sends to {@link #USERS} users in the Confluent framing,
   * mostly under the first schema id, one under an id the registry throttles, one under an id it
   * refuses sendcap, one under the recursive schema nested 10 deep; and the bad records of {@link
   * #badRecords} among them.
   */
  static List<Input> build(String topic, SchemaIds ids) {
    List<ProducerRecord<byte[], byte[]>> generated =
        new CapScenario().records(topic, 2_000, USERS, 0, 20, 41);
    SingleObjectAvroSerde<ScheduledSend> sends = new SingleObjectAvroSerde<>(ScheduledSend.class);
    Map<Integer, Input> bad = badRecords(topic, ids);
    List<Input> blast = new ArrayList<>();
    for (int i = 0; i < generated.size(); i++) {
      ProducerRecord<byte[], byte[]> r = generated.get(i);
      ScheduledSend send = sends.decode(r.value());
      byte[] value =
          switch (i) {
            case 300 ->
                ConfluentWire.frame(ids.throttled(), ConfluentWire.as(send, ids.throttledSchema()));
            case 550 -> ConfluentWire.frameNested(ids.recursive(), send, 10);
            case 700 ->
                ConfluentWire.frame(ids.refused(), ConfluentWire.as(send, ids.refusedSchema()));
            default -> ConfluentWire.frame(ids.v1(), send);
          };
      blast.add(Input.ordinary(new ProducerRecord<>(topic, r.key(), value), send));
      if (bad.containsKey(i)) {
        blast.add(bad.get(i));
      }
    }
    return blast;
  }

  /**
   * Produces the records in order, in gzip-compressed batches as a campaign engine may (a send of 3
   * MB passes the broker so), and returns each by the offset it was written at.
   */
  static Map<Long, Input> produce(String bootstrap, List<Input> inputs) throws Exception {
    Map<String, Object> conf =
        Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
            bootstrap,
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
            true,
            ProducerConfig.COMPRESSION_TYPE_CONFIG,
            "gzip",
            // the producer's own bound is on the uncompressed size; the broker's is on the batch
            ProducerConfig.MAX_REQUEST_SIZE_CONFIG,
            8_000_000);
    List<Future<RecordMetadata>> written = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer())) {
      inputs.forEach(in -> written.add(producer.send(in.record())));
    }
    Map<Long, Input> byOffset = new HashMap<>();
    for (int i = 0; i < inputs.size(); i++) {
      try {
        byOffset.put(written.get(i).get().offset(), inputs.get(i));
      } catch (ExecutionException e) {
        throw new AssertionError("could not produce " + inputs.get(i).label(), e);
      }
    }
    return byOffset;
  }
}
