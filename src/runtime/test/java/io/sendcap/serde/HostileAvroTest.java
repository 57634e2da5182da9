package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.testing.ConfluentWire;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificDatumWriter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Writer schemas and records made to exhaust a deserializer: recursion nested deeper than the
 * stack, schemas nested deep or enormous, lengths claimed beyond the record. Each ends in an {@link
 * UnreadableRecordException} naming the bound, which sends the record to the dead-letter topic.
 */
class HostileAvroTest {
  private static final String TOPIC = "campaign-sends";
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

  HostileAvroTest() throws IOException {
    registry = new FakeSchemaRegistry();
  }

  @AfterEach
  void stop() {
    registry.close();
  }

  private ConfluentAvroSerde<ScheduledSend> sends() {
    ConfluentAvroSerde<ScheduledSend> serde = new ConfluentAvroSerde<>(ScheduledSend.class);
    serde.configure(Map.of("schema.registry.url", registry.url()), false);
    return serde;
  }

  private static byte[] body(ScheduledSend send) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new SpecificDatumWriter<>(ScheduledSend.class).write(send, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  private static byte[] framed(int id, byte[] body) {
    return ByteBuffer.allocate(5 + body.length).put((byte) 0).putInt(id).put(body).array();
  }

  /**
   * The send's body followed by the {@code related} field of {@link
   * ConfluentWire#scheduledSendWithRelated()}, nested.
   */
  private static byte[] nested(int depth) throws IOException {
    byte[] send = body(SEND);
    byte[] body = Arrays.copyOf(send, send.length + depth + 1);
    Arrays.fill(body, send.length, send.length + depth, (byte) 2);
    body[body.length - 1] = 0;
    return body;
  }

  /** A record in single-object encoding: the marker, the writer schema's fingerprint, the body. */
  private static byte[] singleObject(Schema writer, byte[] body) {
    return ByteBuffer.allocate(10 + body.length)
        .order(ByteOrder.LITTLE_ENDIAN)
        .put((byte) 0xC3)
        .put((byte) 0x01)
        .putLong(SchemaNormalization.parsingFingerprint64(writer))
        .put(body)
        .array();
  }

  @Test
  void aSendNestedDeeperThanAllowedIsUnreadableNotAStackOverflow() throws IOException {
    int id = registry.register("campaign-sends-value", ConfluentWire.scheduledSendWithRelated());

    Throwable thrown = catchThrowable(() -> sends().decode(TOPIC, framed(id, nested(200_000))));

    assertThat(thrown)
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("schema id " + id)
        .hasMessageContaining("nest more than avro.max-depth=64 deep");
  }

  @Test
  void aSendOfARecursiveSchemaNestedWithinTheBoundIsRead() throws IOException {
    int id = registry.register("campaign-sends-value", ConfluentWire.scheduledSendWithRelated());

    assertThat(sends().decode(TOPIC, framed(id, nested(60)))).isEqualTo(SEND);
  }

  @Test
  void theDepthIsASetting() throws IOException {
    int id = registry.register("campaign-sends-value", ConfluentWire.scheduledSendWithRelated());
    ConfluentAvroSerde<ScheduledSend> serde = new ConfluentAvroSerde<>(ScheduledSend.class);
    serde.configure(
        Map.of("schema.registry.url", registry.url(), AvroLimits.MAX_DEPTH, "500"), false);

    assertThat(serde.decode(TOPIC, framed(id, nested(400)))).isEqualTo(SEND);
    assertThat(catchThrowable(() -> serde.decode(TOPIC, framed(id, nested(600)))))
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("avro.max-depth=500");
  }

  @Test
  void aSingleObjectSendNestedDeeperThanAllowedIsUnreadable() throws IOException {
    Schema writer = ConfluentWire.scheduledSendWithRelated();
    SingleObjectAvroSerde<ScheduledSend> serde = new SingleObjectAvroSerde<>(ScheduledSend.class);
    serde.addWriterSchema(writer);

    assertThat(serde.decode(singleObject(writer, nested(10)))).isEqualTo(SEND);
    assertThat(catchThrowable(() -> serde.decode(singleObject(writer, nested(200_000)))))
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("avro.max-depth=64");
  }

  @Test
  void aWriterSchemaNestedDeeperThanAllowedIsRefusedNamingTheSetting() throws IOException {
    Schema deep = HostileSchemas.withNestedArrays(100);
    int id = registry.register("campaign-sends-value", deep);

    assertThat(catchThrowable(() -> sends().decode(TOPIC, framed(id, body(SEND)))))
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("schema id " + id)
        .hasMessageContaining("more than avro.max-depth=64 deep");
    SingleObjectAvroSerde<ScheduledSend> singleObject =
        new SingleObjectAvroSerde<>(ScheduledSend.class);
    singleObject.addWriterSchema(deep);
    assertThat(catchThrowable(() -> singleObject.decode(singleObject(deep, body(SEND)))))
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("more than avro.max-depth=64 deep");
  }

  @Test
  void anEnormousWriterSchemaIsRefusedNamingTheSetting() throws IOException {
    Schema enormous = HostileSchemas.withLongDoc(2 << 20);
    int id = registry.register("campaign-sends-value", enormous);

    assertThat(catchThrowable(() -> sends().decode(TOPIC, framed(id, body(SEND)))))
        .isInstanceOf(UnreadableRecordException.class)
        .hasMessageContaining("more than avro.max-schema-bytes=1048576");
  }

  @Test
  void claimedLengthsBeyondTheBytesLeftAreRefusedBeforeAnyAllocation() throws IOException {
    byte[] send = body(SEND);
    // The map of attributes is the last field: claim 2^60 entries in a few bytes.
    byte[] huge = Arrays.copyOf(send, send.length - 1 - "template".length() - 1 - 3 - 1 + 10);
    int at = huge.length - 10;
    long zigzag = (1L << 60) << 1;
    for (int i = 0; i < 9; i++) {
      huge[at + i] = (byte) ((zigzag & 0x7F) | 0x80);
      zigzag >>>= 7;
    }
    huge[at + 9] = (byte) zigzag;
    int own = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);

    assertThat(catchThrowable(() -> sends().decode(TOPIC, framed(own, huge))))
        .isInstanceOf(UnreadableRecordException.class);
  }
}
