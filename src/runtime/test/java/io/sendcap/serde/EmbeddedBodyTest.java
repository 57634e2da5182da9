package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.avro.internal.PendingHeader;
import io.sendcap.avro.internal.PendingSend;
import io.sendcap.testing.NewerSchema;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.apache.avro.specific.SpecificRecord;
import org.junit.jupiter.api.Test;

/**
 * A send read from the input keeps its Avro body only when it was written in sendcap's own schema,
 * and a record that embeds it written from that body is, byte for byte, the record encoded whole:
 * what delivery workers and the buffer's changelog read cannot tell the difference.
 */
class EmbeddedBodyTest {
  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);
  private final SingleObjectAvroSerde<PendingSend> pending =
      new SingleObjectAvroSerde<>(PendingSend.class);

  @Test
  void recordsWrittenFromASendsBodyAreTheRecordsEncodedWhole() {
    SplittableRandom random = new SplittableRandom(7);
    for (int i = 0; i < 500; i++) {
      ScheduledSend send = send(random, i);
      Decoded<ScheduledSend> read = sends.decodeKeepingBody(sends.encode(send));
      assertThat(read.record()).isEqualTo(send);
      assertThat(read.body()).as("the body of a send in sendcap's own schema").isNotNull();

      for (SpecificRecord out : outputs(read.record(), random)) {
        byte[] whole = encode(out, null, null);
        byte[] embedded = encode(out, read.record(), read.body());
        assertThat(embedded)
            .as("%s of send %d", out.getClass().getSimpleName(), i)
            .isEqualTo(whole);
      }
    }
  }

  @Test
  void theBodyIsKeptOnlyForTheOwnSchemaAndOnlyWhenTheRecordTakesEveryByte() {
    ScheduledSend send = send(new SplittableRandom(1), 1);
    byte[] bytes = sends.encode(send);

    assertThat(sends.decodeKeepingBody(bytes).body())
        .isEqualTo(Arrays.copyOfRange(bytes, 10, bytes.length));

    byte[] trailing = Arrays.copyOf(bytes, bytes.length + 1);
    Decoded<ScheduledSend> withTrailingByte = sends.decodeKeepingBody(trailing);
    assertThat(withTrailingByte.record()).isEqualTo(send);
    assertThat(withTrailingByte.body()).as("a body that would carry a stray byte along").isNull();

    sends.addWriterSchema(NewerSchema.SCHEMA);
    Decoded<ScheduledSend> newer =
        sends.decodeKeepingBody(
            NewerSchema.encode("m-9", "c", 9L, "PUSH", Instant.parse("2026-11-02T09:00:00Z")));
    assertThat(newer.record().getMessageId()).isEqualTo("m-9");
    assertThat(newer.body()).as("a send written with another schema").isNull();
  }

  private byte[] encode(SpecificRecord out, ScheduledSend nested, byte[] body) {
    if (out instanceof Delivery d) {
      return deliveries.encode(d, nested, body);
    }
    if (out instanceof Suppression s) {
      return suppressions.encode(s, nested, body);
    }
    return pending.encode((PendingSend) out, nested, body);
  }

  /** Every kind of record sendcap writes with a send in it. */
  private static List<SpecificRecord> outputs(ScheduledSend send, SplittableRandom random) {
    Instant decidedAt = send.getScheduledAt().plusMillis(random.nextInt(1000));
    List<SpecificRecord> outs = new ArrayList<>();
    outs.add(
        Delivery.newBuilder()
            .setSend(send)
            .setSegment("active")
            .setDecidedAt(decidedAt)
            .setFailOpen(random.nextBoolean())
            .build());
    outs.add(
        Suppression.newBuilder()
            .setSend(send)
            .setSegment("default")
            .setReason(SuppressionReason.CAP)
            .setCapWindow("1d")
            .setCapWindowMs(86_400_000L)
            .setCapLimit(2)
            .setCapCount(2)
            .setDecidedAt(decidedAt)
            .setNextEligibleAt(decidedAt.plusSeconds(3600))
            .setShadow(random.nextBoolean())
            .build());
    outs.add(
        Suppression.newBuilder()
            .setSend(send)
            .setSegment("default")
            .setReason(SuppressionReason.LIMITER_UNAVAILABLE)
            .setDecidedAt(decidedAt)
            .build());
    List<PendingHeader> headers = new ArrayList<>();
    for (int h = random.nextInt(3); h > 0; h--) {
      headers.add(
          new PendingHeader(
              "trace-" + h, random.nextBoolean() ? null : ByteBuffer.wrap(new byte[] {1, 2, 3})));
    }
    outs.add(
        new PendingSend(
            random.nextBoolean() ? null : ByteBuffer.wrap(new byte[] {4, 2}),
            send.getScheduledAt().toEpochMilli(),
            "new-users",
            send,
            headers));
    return outs;
  }

  private static ScheduledSend send(SplittableRandom random, int i) {
    Map<String, String> attributes = new HashMap<>();
    for (int a = random.nextInt(3); a > 0; a--) {
      attributes.put("k" + a, "v" + random.nextInt(100));
    }
    return ScheduledSend.newBuilder()
        .setMessageId("m-" + i)
        .setCampaignId("c-" + random.nextInt(5))
        .setUserId(random.nextLong(1, Long.MAX_VALUE))
        .setChannel(Channel.values()[random.nextInt(Channel.values().length)])
        .setScheduledAt(Instant.ofEpochMilli(1_700_000_000_000L + random.nextInt(1_000_000_000)))
        .setTransactional(random.nextInt(10) == 0)
        .setUserTimeZone(random.nextBoolean() ? null : "Europe/Berlin")
        .setAttributes(attributes)
        .build();
  }
}
