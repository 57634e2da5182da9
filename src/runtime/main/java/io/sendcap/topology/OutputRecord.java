package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import org.apache.avro.specific.SpecificRecord;

/**
 * What the decide step forwards: a {@code Delivery} or {@code Suppression}, and the send it embeds
 * with that send's Avro body as read from the input (null if it was written with another schema),
 * so that the output's serializer copies the body instead of encoding the send again.
 */
record OutputRecord(SpecificRecord record, ScheduledSend send, byte[] sendBody) {}
