package io.sendcap.testing;

import io.sendcap.avro.ScheduledSend;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.message.BinaryMessageEncoder;

/**
 * ScheduledSend as a newer campaign engine might write it: one more channel ({@code WHATSAPP}) and
 * an optional {@code messageId}; for the tests of sends that sendcap can read but not decide.
 */
public final class NewerSchema {
  /** The newer schema. */
  public static final Schema SCHEMA = build();

  private static final BinaryMessageEncoder<GenericRecord> ENCODER =
      new BinaryMessageEncoder<>(GenericData.get(), SCHEMA);

  private NewerSchema() {}

  private static Schema build() {
    Schema current = ScheduledSend.SCHEMA$;
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : current.getFields()) {
      Schema type =
          switch (f.name()) {
            case "messageId" -> Schema.createUnion(Schema.create(Schema.Type.NULL), f.schema());
            case "channel" ->
                Schema.createEnum(
                    "Channel",
                    null,
                    current.getNamespace(),
                    List.of("EMAIL", "PUSH", "SMS", "IN_APP", "WHATSAPP"));
            default -> f.schema();
          };
      fields.add(new Schema.Field(f.name(), type, f.doc(), f.defaultVal()));
    }
    return Schema.createRecord(
        current.getName(), current.getDoc(), current.getNamespace(), false, fields);
  }

  /** Encodes a send of the newer schema in single-object encoding. */
  public static byte[] encode(
      String messageId, String campaignId, long userId, String channel, Instant scheduledAt) {
    GenericRecord r = new GenericData.Record(SCHEMA);
    r.put("messageId", messageId);
    r.put("campaignId", campaignId);
    r.put("userId", userId);
    r.put("channel", new GenericData.EnumSymbol(SCHEMA.getField("channel").schema(), channel));
    r.put("scheduledAt", scheduledAt.toEpochMilli());
    r.put("transactional", false);
    r.put("userTimeZone", null);
    r.put("attributes", Map.of());
    try {
      return ENCODER.encode(r).array();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
