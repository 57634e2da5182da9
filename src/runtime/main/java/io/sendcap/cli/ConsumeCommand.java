package io.sendcap.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.app.SendcapTopics;
import io.sendcap.config.SendcapConfig;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sendcap consume}: prints the records of one of sendcap's topics, decoded from either
 * framing (see {@link ToolSerdes}), committed ones only. Dead letters are printed with the reason
 * from their headers and their raw value.
 */
@Command(
    name = "consume",
    mixinStandardHelpOptions = true,
    description =
        "Prints the records of a sendcap topic as they arrive (committed ones only), or from the"
            + " beginning; stops after --max records, at the end of the topic with --until-end, or"
            + " with Ctrl-C.")
final class ConsumeCommand implements Callable<Integer> {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final String ERRORS = "__streams.errors.";

  @Spec CommandSpec spec;

  @Mixin ConfigOptions options;

  @Option(
      names = "--topic",
      required = true,
      description =
          "The topic to read: the input, deliveries, suppressed or dead-letter topic of the"
              + " configuration (topic.input, topic.deliveries, topic.suppressed,"
              + " topic.dlq).")
  String topic;

  @Option(names = "--json", description = "One JSON object per record and nothing else, for jq.")
  boolean json;

  @Option(names = "--max", description = "Stop after this many records.")
  Long max;

  @Option(names = "--from-beginning", description = "Start at the oldest record, not the newest.")
  boolean fromBeginning;

  @Option(
      names = "--until-end",
      description =
          "Stop at the end of the topic as it is when the command starts: its committed records"
              + " up to the end offsets of that moment (with --from-beginning, the whole topic).")
  boolean untilEnd;

  @Override
  public Integer call() throws Exception {
    SendcapConfig config = options.load();
    Optional<Class<? extends SpecificRecord>> type = SendcapTopics.recordOf(config.topics(), topic);
    SendcapTopics.requireTopic(config, topic);
    Deserializer<? extends SpecificRecord> serde =
        type.map(t -> ToolSerdes.reader(config, t)).orElse(null);
    PrintWriter out = spec.commandLine().getOut();
    long[] printed = {0};
    try (OutputReader reader =
        new OutputReader(SendcapTopics.clientProperties(config), List.of(topic), fromBeginning)) {
      Map<TopicPartition, Long> ends = untilEnd ? reader.endOffsets() : null;
      while ((max == null || printed[0] < max) && (ends == null || reader.remaining(ends) > 0)) {
        reader.poll(
            Duration.ofMillis(500),
            r -> {
              boolean beforeTheEnd =
                  ends == null
                      || r.offset() < ends.get(new TopicPartition(r.topic(), r.partition()));
              if ((max == null || printed[0] < max) && beforeTheEnd) {
                String body = serde == null ? deadLetter(r) : AvroJson.write(decode(serde, r));
                out.println(
                    json ? body : r.partition() + "@" + r.offset() + " " + key(r) + " " + body);
                out.flush();
                printed[0]++;
              }
            });
      }
    }
    return 0;
  }

  /** The record's value, decoded; one that cannot be is an error naming the record and why. */
  private static SpecificRecord decode(
      Deserializer<? extends SpecificRecord> serde, ConsumerRecord<byte[], byte[]> r) {
    try {
      return serde.deserialize(r.topic(), r.value());
    } catch (SerializationException e) {
      throw new IllegalArgumentException(
          "cannot read "
              + r.topic()
              + " "
              + r.partition()
              + "@"
              + r.offset()
              + ": "
              + e.getMessage(),
          e);
    }
  }

  private static String key(ConsumerRecord<byte[], byte[]> r) {
    return r.key() == null ? "-" : new String(r.key(), StandardCharsets.UTF_8);
  }

  /** A dead letter: the reason and origin from its headers, its value in Base64. */
  private static String deadLetter(ConsumerRecord<byte[], byte[]> r) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (String name : List.of("message", "exception", "topic", "partition", "offset")) {
      Header h = r.headers().lastHeader(ERRORS + name);
      m.put(name, h == null ? null : new String(h.value(), StandardCharsets.UTF_8));
    }
    m.put("timestamp", Instant.ofEpochMilli(r.timestamp()).toString());
    m.put("value", r.value() == null ? null : Base64.getEncoder().encodeToString(r.value()));
    try {
      return MAPPER.writeValueAsString(m);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot print a dead letter as JSON", e);
    }
  }
}
