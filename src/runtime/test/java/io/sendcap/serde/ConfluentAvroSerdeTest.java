package io.sendcap.serde;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.testing.FakeSchemaRegistry;
import io.sendcap.testing.FakeSchemaRegistry.Request;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ConfluentAvroSerdeTest {
  private static final String TOPIC = "campaign-sends";
  private static final String PASSWORD = "s3cret-Pa55";
  private static final ScheduledSend SEND =
      ScheduledSend.newBuilder()
          .setMessageId("m-1")
          .setCampaignId("spring-sale")
          .setUserId(42L)
          .setChannel(Channel.PUSH)
          .setScheduledAt(Instant.parse("2026-11-02T09:00:00Z"))
          .setUserTimeZone("Europe/Berlin")
          .setAttributes(Map.of("template", "t-7"))
          .build();

  private final FakeSchemaRegistry registry;
  private final List<String> messages = new ArrayList<>();

  ConfluentAvroSerdeTest() throws IOException {
    registry = new FakeSchemaRegistry();
  }

  @AfterEach
  void stop() {
    registry.close();
  }

  private ConfluentAvroSerde<ScheduledSend> sends() {
    return sends(true);
  }

  private ConfluentAvroSerde<ScheduledSend> sends(boolean autoRegister) {
    ConfluentAvroSerde<ScheduledSend> serde = new ConfluentAvroSerde<>(ScheduledSend.class);
    serde.configure(
        Map.of(
            "schema.registry.url",
            registry.url(),
            "auto.register.schemas",
            String.valueOf(autoRegister)),
        false);
    return serde;
  }

  /** The Avro binary body of a record, written by Avro alone. */
  private static byte[] body(ScheduledSend send) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new SpecificDatumWriter<>(ScheduledSend.class).write(send, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  /** A record as Confluent's serializers frame it: 0x00, the 4-byte big-endian id, the body. */
  private static byte[] framed(int id, byte[] body) {
    return ByteBuffer.allocate(5 + body.length).put((byte) 0).putInt(id).put(body).array();
  }

  private static byte[] generic(Schema schema, GenericRecord record) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(schema).write(record, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  /** The send as a campaign engine with its own version of the schema writes it. */
  private static GenericRecord asWriter(Schema writer, ScheduledSend send) {
    GenericRecord record = new GenericData.Record(writer);
    for (Schema.Field field : writer.getFields()) {
      if (ScheduledSend.SCHEMA$.getField(field.name()) == null) {
        continue;
      }
      Object value = send.get(field.name());
      if (value instanceof Instant instant) {
        value = instant.toEpochMilli();
      }
      if (value instanceof Channel channel) {
        value = new GenericData.EnumSymbol(field.schema(), channel.name());
      }
      record.put(field.name(), value);
    }
    return record;
  }

  /** ScheduledSend's schema with its fields changed by {@code edit}. */
  private static Schema edited(java.util.function.Consumer<List<Schema.Field>> edit) {
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      fields.add(new Schema.Field(f, f.schema()));
    }
    edit.accept(fields);
    return Schema.createRecord(
        ScheduledSend.SCHEMA$.getName(), null, ScheduledSend.SCHEMA$.getNamespace(), false, fields);
  }

  private static int index(List<Schema.Field> fields, String name) {
    for (int i = 0; i < fields.size(); i++) {
      if (fields.get(i).name().equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException(name);
  }

  private SerializationException unreadable(ConfluentAvroSerde<?> serde, byte[] bytes) {
    SerializationException e =
        catchThrowableOfType(SerializationException.class, () -> serde.decode(TOPIC, bytes));
    messages.add(e.getMessage());
    return e;
  }

  @Test
  void writesZeroTheFourByteBigEndianSchemaIdThenTheAvroBody() throws IOException {
    byte[] bytes = sends().serializer().serialize(TOPIC, SEND);

    assertThat(registry.versions("campaign-sends-value"))
        .containsExactly(FakeSchemaRegistry.FIRST_ID);
    byte[] expected = new byte[5];
    expected[3] = 0x01;
    expected[4] = 0x01; // id 257 = 0x00000101
    assertThat(Arrays.copyOfRange(bytes, 0, 5)).containsExactly(expected);
    assertThat(Arrays.copyOfRange(bytes, 5, bytes.length)).containsExactly(body(SEND));
    assertThat(bytes).containsExactly(framed(FakeSchemaRegistry.FIRST_ID, body(SEND)));
    assertThat(sends().deserializer().deserialize(TOPIC, bytes)).isEqualTo(SEND);
  }

  @Test
  void registersUnderTheTopicsValueSubjectOrKeySubjectAndAsksOncePerTopic() {
    ConfluentAvroSerde<ScheduledSend> values = sends();
    for (int i = 0; i < 100; i++) {
      values.encode(TOPIC, SEND);
    }
    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly("POST /subjects/campaign-sends-value/versions");

    ConfluentAvroSerde<ScheduledSend> keys = new ConfluentAvroSerde<>(ScheduledSend.class);
    keys.configure(Map.of("schema.registry.url", registry.url()), true);
    assertThat(keys.subject(TOPIC)).isEqualTo("campaign-sends-key");
    keys.encode(TOPIC, SEND);
    assertThat(registry.versions("campaign-sends-key"))
        .containsExactly(FakeSchemaRegistry.FIRST_ID);
  }

  @Test
  void aReaderAsksForEachSchemaIdOnce() {
    int id = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);
    byte[] bytes =
        new ConfluentAvroSerde<>(ScheduledSend.class, client(), false, false).encode(TOPIC, SEND);
    registry.clearRequests();

    ConfluentAvroSerde<ScheduledSend> reader = sends();
    for (int i = 0; i < 100; i++) {
      assertThat(reader.decode(TOPIC, bytes)).isEqualTo(SEND);
    }

    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly("GET /schemas/ids/" + id);
  }

  private SchemaRegistryClient client() {
    return new SchemaRegistryClient(SchemaRegistrySettings.of(registry.url()));
  }

  @Test
  void withoutAutoRegistrationTheSchemaMustBeThereAlready() {
    ConfluentAvroSerde<ScheduledSend> serde = sends(false);

    SerializationException e =
        catchThrowableOfType(SerializationException.class, () -> serde.encode(TOPIC, SEND));
    assertThat(e)
        .hasMessage(
            "the schema of io.sendcap.avro.ScheduledSend is not registered under subject"
                + " campaign-sends-value in the schema registry at ["
                + registry.url()
                + "], and auto.register.schemas=false: register it there (self-contained, as"
                + " sendcap writes it), or set auto.register.schemas=true");
    assertThat(registry.versions("campaign-sends-value")).isEmpty();

    int id = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);
    registry.clearRequests();
    assertThat(serde.encode(TOPIC, SEND)).startsWith(framed(id, new byte[0]));
    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly("POST /subjects/campaign-sends-value");
  }

  @Test
  void keepsTheBodyOfASendWrittenWithSendcapsOwnSchemaOnly() throws IOException {
    int own = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);
    Schema evolved =
        edited(
            fields ->
                fields.add(
                    new Schema.Field(
                        "priority",
                        SchemaBuilder.unionOf().nullType().and().intType().endUnion(),
                        "Added by the campaign engine.",
                        Schema.Field.NULL_DEFAULT_VALUE)));
    int other = registry.register("campaign-sends-value", evolved);

    Decoded<ScheduledSend> same = sends().decodeKeepingBody(TOPIC, framed(own, body(SEND)));
    Decoded<ScheduledSend> newer =
        sends().decodeKeepingBody(TOPIC, framed(other, generic(evolved, asWriter(evolved, SEND))));

    assertThat(same.record()).isEqualTo(SEND);
    assertThat(same.body()).isEqualTo(body(SEND));
    assertThat(newer.record()).isEqualTo(SEND);
    assertThat(newer.body()).as("a body in another schema's layout").isNull();
  }

  @Test
  void aDeliveryWrittenFromItsSendsBodyIsTheDeliveryEncodedWhole() throws IOException {
    ConfluentAvroSerde<Delivery> deliveries = new ConfluentAvroSerde<>(Delivery.class);
    deliveries.configure(Map.of("schema.registry.url", registry.url()), false);
    Delivery delivery =
        Delivery.newBuilder()
            .setSend(SEND)
            .setSegment("active")
            .setDecidedAt(Instant.parse("2026-11-02T09:00:01Z"))
            .build();

    assertThat(deliveries.encode("deliveries", delivery, SEND, body(SEND)))
        .isEqualTo(deliveries.encode("deliveries", delivery));
  }

  @Test
  void readsAWriterSchemaWithAnAddedOptionalField() throws IOException {
    Schema evolved =
        edited(
            fields ->
                fields.add(
                    3,
                    new Schema.Field(
                        "priority",
                        SchemaBuilder.unionOf().nullType().and().intType().endUnion(),
                        "Added by the campaign engine.",
                        Schema.Field.NULL_DEFAULT_VALUE)));
    int id = registry.register("campaign-sends-value", evolved);
    GenericRecord record = asWriter(evolved, SEND);
    record.put("priority", 5);

    ScheduledSend read = sends().decode(TOPIC, framed(id, generic(evolved, record)));

    assertThat(read).isEqualTo(SEND);
  }

  @Test
  void readsAWriterSchemaWithoutAFieldThatHasADefault() throws IOException {
    Schema older = edited(fields -> fields.remove(index(fields, "attributes")));
    int id = registry.register("campaign-sends-value", older);

    ScheduledSend read = sends().decode(TOPIC, framed(id, generic(older, asWriter(older, SEND))));

    assertThat(read.getMessageId()).isEqualTo("m-1");
    assertThat(read.getAttributes()).isEmpty();
  }

  @Test
  void anUnknownSchemaIdFailsNamingTheIdTheSubjectAndTheRegistrysAnswer() throws IOException {
    SerializationException e = unreadable(sends(), framed(4242, body(SEND)));

    assertThat(e)
        .hasMessage(
            "not a io.sendcap.avro.ScheduledSend sendcap can read: schema id 4242 (topic"
                + " campaign-sends, subject campaign-sends-value): the schema registry at "
                + registry.url()
                + " answered 404 to GET /schemas/ids/4242: error_code 40403, Schema 4242 not"
                + " found");
  }

  /**
   * An id the registry does not know, or whose answer is not a schema, is bad data as much as bytes
   * that are not Avro: its dead letter's stack trace header is the reason, not the deserializer's
   * frames and the registry client's beneath them, for every such record.
   */
  @Test
  void aSchemaIdTheRegistryCannotResolveIsUnreadableDataWithoutAStackTrace() throws IOException {
    SerializationException unknown = unreadable(sends(), framed(4242, body(SEND)));
    registry.answerAll(200, FakeSchemaRegistry.CONTENT_TYPE, "<html>".getBytes(UTF_8));
    SerializationException garbled = unreadable(sends(), framed(4243, body(SEND)));

    for (SerializationException e : List.of(unknown, garbled)) {
      assertThat(e).isInstanceOf(UnreadableRecordException.class).hasNoCause();
      assertThat(e.getStackTrace()).isEmpty();
    }
    assertThat(garbled).hasMessageContaining("with a body that is not JSON: <html>");
  }

  @Test
  void aFieldOfAnotherTypeFailsNamingTheField() throws IOException {
    Schema incompatible =
        edited(
            fields -> {
              int i = index(fields, "userId");
              fields.set(i, new Schema.Field("userId", Schema.create(Schema.Type.STRING)));
            });
    int id = registry.register("campaign-sends-value", incompatible);
    GenericRecord record = asWriter(incompatible, SEND);
    record.put("userId", "forty-two");

    SerializationException e = unreadable(sends(), framed(id, generic(incompatible, record)));

    assertThat(e)
        .hasMessage(
            "a io.sendcap.avro.ScheduledSend written with schema id "
                + id
                + " (topic campaign-sends, subject campaign-sends-value) that sendcap's schema"
                + " cannot read: userId is string in the writer's schema, long in sendcap's");
  }

  @Test
  void aMissingRequiredFieldOrAnUnknownEnumSymbolFailsNamingTheField() throws IOException {
    Schema noMessageId = edited(fields -> fields.remove(index(fields, "messageId")));
    int id = registry.register("campaign-sends-value", noMessageId);
    assertThat(unreadable(sends(), framed(id, generic(noMessageId, asWriter(noMessageId, SEND)))))
        .hasMessageEndingWith("that sendcap's schema cannot read: messageId is missing");

    Schema moreChannels =
        edited(
            fields -> {
              int i = index(fields, "channel");
              fields.set(
                  i,
                  new Schema.Field(
                      "channel",
                      Schema.createEnum(
                          "Channel",
                          null,
                          "io.sendcap.avro",
                          List.of("EMAIL", "PUSH", "SMS", "IN_APP", "WHATSAPP"))));
            });
    int newer = registry.register("campaign-sends-value", moreChannels);
    GenericRecord whatsapp = asWriter(moreChannels, SEND);
    whatsapp.put(
        "channel",
        new GenericData.EnumSymbol(moreChannels.getField("channel").schema(), "WHATSAPP"));
    assertThat(unreadable(sends(), framed(newer, generic(moreChannels, whatsapp))))
        .hasMessageEndingWith(
            "cannot read: channel WHATSAPP is not one of [EMAIL, PUSH, SMS, IN_APP]");
    // A send of a channel sendcap knows, written with the same newer schema, is read.
    assertThat(
            sends()
                .decode(TOPIC, framed(newer, generic(moreChannels, asWriter(moreChannels, SEND)))))
        .isEqualTo(SEND);
  }

  @Test
  void aNestedFieldThatDoesNotFitIsNamedByItsPath() throws IOException {
    ConfluentAvroSerde<Delivery> deliveries = new ConfluentAvroSerde<>(Delivery.class);
    deliveries.configure(Map.of("schema.registry.url", registry.url()), false);
    ObjectNode json = (ObjectNode) new ObjectMapper().readTree(Delivery.SCHEMA$.toString());
    ArrayNode sendFields = (ArrayNode) json.at("/fields/0/type/fields");
    sendFields.remove(0); // messageId
    Schema noMessageId = new Schema.Parser().parse(json.toString());
    int id = registry.register("deliveries-value", noMessageId);
    GenericRecord send = asWriter(noMessageId.getField("send").schema(), SEND);
    GenericRecord delivery = new GenericData.Record(noMessageId);
    delivery.put("send", send);
    delivery.put("segment", "active");
    delivery.put("decidedAt", 0L);
    delivery.put("failOpen", false);

    SerializationException e =
        catchThrowableOfType(
            SerializationException.class,
            () -> deliveries.decode("deliveries", framed(id, generic(noMessageId, delivery))));

    assertThat(e)
        .hasMessage(
            "a io.sendcap.avro.Delivery written with schema id "
                + id
                + " (topic deliveries, subject deliveries-value) that sendcap's schema cannot read:"
                + " send.messageId is missing from the writer's schema and has no default in"
                + " sendcap's");
  }

  @Test
  void readsAvroSingleObjectEncodingToo() {
    byte[] singleObject = new SingleObjectAvroSerde<>(ScheduledSend.class).encode(SEND);

    assertThat(sends().decode(TOPIC, singleObject)).isEqualTo(SEND);
    assertThat(registry.requests()).isEmpty();
  }

  @Test
  void otherBytesFailNamingTheFirstBytes() {
    assertThat(
            unreadable(
                sends(), "{\"messageId\": 1}".getBytes(java.nio.charset.StandardCharsets.UTF_8)))
        .hasMessage(
            "not a io.sendcap.avro.ScheduledSend in the Confluent wire format (0x00, then a 4-byte"
                + " schema id) or Avro single-object encoding (0xC3 0x01): it starts with 0x7B"
                + " 0x22 0x6D 0x65");
    assertThat(unreadable(sends(), new byte[] {0, 0, 1}))
        .hasMessage(
            "not a io.sendcap.avro.ScheduledSend in the Confluent wire format: 3 byte(s), fewer"
                + " than its 5-byte header (0x00, then a 4-byte schema id)");
    assertThat(unreadable(sends(), new byte[0])).hasMessageEndingWith("the value is empty");
    assertThat(sends().decode(TOPIC, null)).isNull();
  }

  @Test
  void aBodyCutShortFailsNamingTheSchemaId() throws IOException {
    int id = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);
    byte[] bytes = framed(id, body(SEND));

    assertThat(unreadable(sends(), Arrays.copyOf(bytes, 12)))
        .hasMessageStartingWith(
            "not a io.sendcap.avro.ScheduledSend in the Confluent wire format with schema id "
                + id
                + " (topic campaign-sends, subject campaign-sends-value): ");
  }

  @Test
  void aRegistryThatCannotBeReachedIsNoBadRecord() throws IOException {
    ConfluentAvroSerde<ScheduledSend> serde = new ConfluentAvroSerde<>(ScheduledSend.class);
    serde.configure(Map.of("schema.registry.url", SchemaRegistryClientTest.deadUrl()), false);

    Throwable read = catchThrowable(() -> serde.decode(TOPIC, framed(7, body(SEND))));
    Throwable written = catchThrowable(() -> serde.encode(TOPIC, SEND));

    assertThat(read)
        .isInstanceOf(SchemaRegistryUnavailableException.class)
        .isNotInstanceOf(SerializationException.class)
        .hasMessageStartingWith("cannot reach the schema registry (schema.registry.url): http://");
    assertThat(written).isInstanceOf(SchemaRegistryUnavailableException.class);
  }

  @Test
  void deliveriesAreRegisteredSelfContainedAndReadBackThroughTheRegistry() {
    ConfluentAvroSerde<Delivery> deliveries = new ConfluentAvroSerde<>(Delivery.class);
    deliveries.configure(Map.of("schema.registry.url", registry.url()), false);
    Delivery delivery =
        Delivery.newBuilder()
            .setSend(SEND)
            .setSegment("active")
            .setDecidedAt(Instant.parse("2026-11-02T09:00:01Z"))
            .build();

    byte[] bytes = deliveries.encode("deliveries", delivery);

    int id = registry.versions("deliveries-value").get(0);
    assertThat(new Schema.Parser().parse(registry.schema(id).orElseThrow()))
        .isEqualTo(Delivery.SCHEMA$);
    ConfluentAvroSerde<Delivery> worker = new ConfluentAvroSerde<>(Delivery.class);
    worker.configure(Map.of("schema.registry.url", registry.url()), false);
    assertThat(worker.decode("deliveries", bytes)).isEqualTo(delivery);
  }

  @Test
  void noErrorShowsTheRegistryPassword() throws IOException {
    registry.requireUserInfo("sendcap:" + PASSWORD);
    Map<String, String> configs =
        Map.of(
            "schema.registry.url",
            registry.url(),
            "schema.registry.basic.auth.user.info",
            "sendcap:" + PASSWORD,
            "auto.register.schemas",
            "false");
    ConfluentAvroSerde<ScheduledSend> serde = new ConfluentAvroSerde<>(ScheduledSend.class);
    serde.configure(configs, false);
    Schema incompatible =
        edited(
            fields ->
                fields.set(
                    index(fields, "userId"),
                    new Schema.Field("userId", Schema.create(Schema.Type.STRING))));
    int id = registry.register("campaign-sends-value", incompatible);
    GenericRecord record = asWriter(incompatible, SEND);
    record.put("userId", "x");

    unreadable(serde, framed(4242, body(SEND)));
    unreadable(serde, framed(id, generic(incompatible, record)));
    unreadable(serde, new byte[] {1, 2, 3});
    messages.add(catchThrowable(() -> serde.encode(TOPIC, SEND)).getMessage());
    ConfluentAvroSerde<ScheduledSend> wrongPassword = new ConfluentAvroSerde<>(ScheduledSend.class);
    wrongPassword.configure(
        Map.of(
            "schema.registry.url",
            registry.url(),
            "schema.registry.basic.auth.user.info",
            "sendcap:" + PASSWORD + "x"),
        false);
    messages.add(catchThrowable(() -> wrongPassword.encode(TOPIC, SEND)).getMessage());
    messages.add(
        catchThrowable(() -> wrongPassword.decode(TOPIC, framed(id, body(SEND)))).getMessage());
    registry.unavailable(true);
    messages.add(
        catchThrowable(() -> serde.decode(TOPIC, framed(id + 1, body(SEND)))).getMessage());

    assertThat(messages)
        .hasSize(7)
        .allSatisfy(m -> assertThat(m).isNotBlank().doesNotContain(PASSWORD));
    assertThat(messages.get(4)).contains("answered 401").contains("error_code 401, Unauthorized");
  }
}
