package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import org.apache.avro.specific.SpecificRecord;

/**
 * What the decide step forwards: a {@code Delivery} or {@code Suppression}, and the send it embeds
 * with that send's Avro body as read from the input (null if it was written with another schema),
 * so that the output's serializer copies the body instead of encoding the send again; or, with no
 * record, a send that cannot be decided, for the dead-letter topic (the reason in its headers).
 */
record OutputRecord(SpecificRecord record, ScheduledSend send, byte[] sendBody) {
  /** A send for the dead-letter topic. */
  static OutputRecord deadLetter(ScheduledSend send, byte[] sendBody) {
    return new OutputRecord(null, send, sendBody);
  }

  /** Whether the send goes to the dead-letter topic. */
  boolean deadLetter() {
    return record == null;
  }
}
