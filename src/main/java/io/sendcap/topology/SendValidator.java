package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import java.time.DateTimeException;
import java.time.ZoneId;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * Reads input sends and rejects the ones sendcap cannot decide, so that they reach the dead-letter
 * topic with the reason instead of stopping the pipeline.
 */
final class SendValidator implements Deserializer<ScheduledSend> {
  private final Deserializer<ScheduledSend> avro;

  SendValidator(Deserializer<ScheduledSend> avro) {
    this.avro = avro;
  }

  @Override
  public ScheduledSend deserialize(String topic, byte[] bytes) {
    if (bytes == null) {
      throw new SerializationException("record has no value (a tombstone is not a send)");
    }
    ScheduledSend send = avro.deserialize(topic, bytes);
    if (send.getMessageId().isBlank()) {
      throw new SerializationException("messageId is empty");
    }
    if (send.getUserId() < 0) {
      throw new SerializationException("userId " + send.getUserId() + " is negative");
    }
    if (send.getUserTimeZone() != null && !isZone(send.getUserTimeZone())) {
      throw new SerializationException(
          "userTimeZone \"" + send.getUserTimeZone() + "\" is not a time zone id");
    }
    return send;
  }

  private static boolean isZone(String id) {
    try {
      ZoneId.of(id);
      return true;
    } catch (DateTimeException e) {
      return false;
    }
  }
}
