package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.avro.internal.PendingSend;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;
import org.junit.jupiter.api.Test;

class SingleObjectAvroSerdeTest {

  @Test
  void readsASuppressionWrittenBeforeTheShadowField() throws IOException {
    Schema v1;
    try (InputStream in = getClass().getResourceAsStream("/schemas/history/Suppression-v1.avsc")) {
      v1 = new Schema.Parser().parse(in);
    }
    assertThat(v1.getField("shadow")).isNull();
    Schema sendSchema = v1.getField("send").schema();
    GenericRecord send = new GenericData.Record(sendSchema);
    send.put("messageId", "m-1");
    send.put("campaignId", "spring-sale");
    send.put("userId", 42L);
    send.put(
        "channel", new GenericData.EnumSymbol(sendSchema.getField("channel").schema(), "PUSH"));
    send.put("scheduledAt", 1_700_000_000_000L);
    send.put("transactional", false);
    send.put("attributes", Map.of());
    GenericRecord old = new GenericData.Record(v1);
    old.put("send", send);
    old.put("segment", "active");
    old.put("reason", new GenericData.EnumSymbol(v1.getField("reason").schema(), "CAP"));
    old.put("capWindow", "1d");
    old.put("capWindowMs", 86_400_000L);
    old.put("capLimit", 1);
    old.put("capCount", 1);
    old.put("decidedAt", 1_700_000_000_500L);
    old.put("nextEligibleAt", 1_700_086_400_000L);
    ByteBuffer encoded = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v1).encode(old);
    byte[] bytes = new byte[encoded.remaining()];
    encoded.get(bytes);

    Suppression read;
    try (SingleObjectAvroSerde<Suppression> serde =
        new SingleObjectAvroSerde<>(Suppression.class)) {
      read = serde.decode(bytes);
    }

    assertThat(read.getSend().getMessageId()).isEqualTo("m-1");
    assertThat(read.getSegment()).isEqualTo("active");
    assertThat(read.getReason()).isEqualTo(SuppressionReason.CAP);
    assertThat(read.getNextEligibleAt()).hasToString("2023-11-15T22:13:20Z");
    assertThat(read.getShadow()).isFalse();
  }

  /**
   * An instance upgraded in place restores its micro-batch buffer from the changelog, written
   * before input headers were kept: those sends are read, with no headers.
   */
  @Test
  void readsAPendingSendWrittenBeforeTheHeadersField() throws IOException {
    Schema v1;
    try (InputStream in = getClass().getResourceAsStream("/schemas/history/PendingSend-v1.avsc")) {
      v1 = new Schema.Parser().parse(in);
    }
    assertThat(v1.getField("headers")).isNull();
    Schema sendSchema = v1.getField("send").schema();
    GenericRecord send = new GenericData.Record(sendSchema);
    send.put("messageId", "m-1");
    send.put("campaignId", "spring-sale");
    send.put("userId", 42L);
    send.put(
        "channel", new GenericData.EnumSymbol(sendSchema.getField("channel").schema(), "PUSH"));
    send.put("scheduledAt", 1_700_000_000_000L);
    send.put("transactional", false);
    send.put("attributes", Map.of());
    GenericRecord old = new GenericData.Record(v1);
    old.put("key", ByteBuffer.wrap(new byte[] {'4', '2'}));
    old.put("timestamp", 1_699_999_000_000L);
    old.put("segment", "active");
    old.put("send", send);
    ByteBuffer encoded = new BinaryMessageEncoder<GenericRecord>(GenericData.get(), v1).encode(old);
    byte[] bytes = new byte[encoded.remaining()];
    encoded.get(bytes);

    PendingSend read;
    try (SingleObjectAvroSerde<PendingSend> serde =
        new SingleObjectAvroSerde<>(PendingSend.class)) {
      read = serde.decode(bytes);
    }

    assertThat(read.getSend().getMessageId()).isEqualTo("m-1");
    assertThat(read.getTimestamp()).isEqualTo(1_699_999_000_000L);
    assertThat(read.getHeaders()).isEmpty();
  }

  @Test
  void writesTheSameBytesAsAvrosOwnSingleObjectEncoder() throws IOException {
    Suppression suppression =
        Suppression.newBuilder()
            .setSend(
                ScheduledSend.newBuilder()
                    .setMessageId("m-é-" + "x".repeat(3000))
                    .setCampaignId("c")
                    .setUserId(7L)
                    .setChannel(Channel.SMS)
                    .setScheduledAt(Instant.ofEpochMilli(1_700_000_000_000L))
                    .setAttributes(Map.of("k", "v"))
                    .build())
            .setSegment("active")
            .setReason(SuppressionReason.MIN_INTERVAL)
            .setDecidedAt(Instant.ofEpochMilli(1_700_000_000_001L))
            .build();
    ByteBuffer expected = suppression.toByteBuffer(); // the generated class's own encoder
    byte[] bytes = new byte[expected.remaining()];
    expected.get(bytes);
    try (SingleObjectAvroSerde<Suppression> serde =
        new SingleObjectAvroSerde<>(Suppression.class)) {
      assertThat(serde.encode(suppression)).isEqualTo(bytes);
      assertThat(serde.encode(suppression))
          .as("a second time, reusing the buffer")
          .isEqualTo(bytes);
      assertThat(serde.decode(serde.encode(suppression))).isEqualTo(suppression);
    }
  }
}
