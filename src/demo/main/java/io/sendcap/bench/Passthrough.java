package io.sendcap.bench;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A pass-through Kafka Streams topology, the yardstick of {@code bench pipeline}: every record of
 * the input topic is written to the output topic unchanged.
 *
 * <p>Keys and values are read and written with byte-array serdes, so nothing is deserialized or
 * serialized: the bytes, timestamp and headers go out as they came in, to the same partition number
 * (the key is unchanged and both topics have the same partition count). No state store, no global
 * store, no repartition topic; what it costs is Kafka Streams' consume, produce and (under
 * exactly-once) transaction machinery alone.
 */
final class Passthrough {
  private Passthrough() {}

  /** Builds the topology from {@code input} to {@code output}. */
  static Topology topology(String input, String output) {
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()).withName("in"))
        .to(output, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()).withName("out"));
    return builder.build();
  }
}
