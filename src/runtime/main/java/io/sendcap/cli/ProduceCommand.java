package io.sendcap.cli;

import io.sendcap.app.SendcapTopics;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.regex.Pattern;
import me.tongfei.progressbar.ProgressBar;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code sendcap produce}: JSON lines to one of sendcap's topics, as Avro records in the configured
 * framing ({@code avro.serde}), keyed by user id and stamped with the time they are produced, as a
 * campaign engine's Kafka producer stamps them unless told otherwise. A record the broker refuses
 * is counted under the broker's reason.
 */
@Command(
    name = "produce",
    mixinStandardHelpOptions = true,
    description =
        "Produces the JSON lines of a file (Avro field names; timestamps as ISO-8601, epoch"
            + " ms, or now, now+5m, now-1d: relative to when the command starts) to a sendcap"
            + " topic, keyed by user id. Each bad line is reported with its"
            + " number; the good ones are still sent. Exits 1 if a line was bad, 2 if the broker"
            + " refused records (each reason printed once, with how many records it refused).")
final class ProduceCommand implements Callable<Integer> {
  /** What a record is stamped with. */
  enum Stamp {
    /** Left unset: the producer stamps the time it produces the record. */
    PRODUCED,
    /** The send's {@code scheduledAt}. */
    SCHEDULED;

    /** Reads the option's value, {@code produced} or {@code scheduled}. */
    static final class Converter implements ITypeConverter<Stamp> {
      @Override
      public Stamp convert(String value) {
        for (Stamp s : values()) {
          if (s.name().equalsIgnoreCase(value)) {
            return s;
          }
        }
        throw new TypeConversionException(
            "'" + value + "' is not produced or scheduled (--timestamp)");
      }
    }
  }

  @Spec CommandSpec spec;

  @Mixin ConfigOptions options;

  @Option(
      names = "--topic",
      required = true,
      description = "The topic: the input, deliveries or suppressed topic of the configuration.")
  String topic;

  @Option(names = "--file", required = true, description = "The JSON lines, one record a line.")
  Path file;

  @Option(
      names = "--timestamp",
      paramLabel = "produced|scheduled",
      converter = Stamp.Converter.class,
      description =
          "Record timestamps: produced (default) leaves them to the producer, which stamps each"
              + " record with the time it is produced, as Kafka producers do unless told"
              + " otherwise. sendcap does not decide from the record's timestamp (cap.clock=event"
              + " decides at the send's scheduledAt, wall at the time it decides), but sends a"
              + " send whose scheduledAt is more than cap.max-skew.ms (7 days by default) from"
              + " it to the dead-letter topic. scheduled stamps each record with its send's"
              + " scheduledAt, as earlier versions did: a broker refuses records stamped more than"
              + " log.message.timestamp.after.max.ms ahead (1 hour by default) and deletes those"
              + " older than the topic's retention.ms (7 days by default).")
  Stamp timestamp = Stamp.PRODUCED;

  @Override
  public Integer call() throws IOException {
    SendcapConfig config = options.load();
    Class<? extends SpecificRecord> type =
        SendcapTopics.recordOf(config.topics(), topic)
            .orElseThrow(
                () -> new IllegalArgumentException("the dead-letter topic takes no JSON lines"));
    if (!Files.isReadable(file)) {
      throw new IllegalArgumentException("cannot read " + file);
    }
    SendcapTopics.requireTopic(config, topic);
    long lines;
    try (var counter = Files.lines(file, StandardCharsets.UTF_8)) {
      lines = counter.count();
    }
    return produce(config, type, lines);
  }

  private <T extends SpecificRecord> int produce(SendcapConfig config, Class<T> type, long lines)
      throws IOException {
    Function<T, byte[]> encode = ToolSerdes.writer(config, type, topic);
    PrintWriter err = spec.commandLine().getErr();
    Refusals refused = new Refusals();
    long sent = 0;
    long bad = 0;
    Properties conf = SendcapTopics.clientProperties(config);
    conf.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    conf.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) config.brokerTimeout().toMillis());
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer());
        ProgressBar bar = ProgressBars.on(System.err, "produced", lines).build()) {
      String line;
      long number = 0;
      // One instant for the file, so that now and now+5m in two lines are five minutes apart.
      Instant now = Instant.now();
      while ((line = in.readLine()) != null) {
        number++;
        bar.step();
        if (line.isBlank()) {
          continue;
        }
        T record;
        try {
          record = AvroJson.read(line, type, now);
        } catch (AvroJson.JsonMismatchException e) {
          err.printf("%s:%d: %s%n", file, number, e.getMessage());
          bad++;
          continue;
        }
        ScheduledSend send = sendOf(record);
        byte[] key = Long.toString(send.getUserId()).getBytes(StandardCharsets.UTF_8);
        Long stamp = timestamp == Stamp.SCHEDULED ? send.getScheduledAt().toEpochMilli() : null;
        producer.send(
            new ProducerRecord<>(topic, null, stamp, key, encode.apply(record)),
            (metadata, e) -> {
              if (e != null) {
                refused.add(e);
              }
            });
        sent++;
      }
      producer.flush();
    }
    if (refused.total() > 0) {
      err.printf("sendcap: %,d records could not be written to %s:%n", refused.total(), topic);
      int width = String.format("%,d", refused.total()).length();
      refused.forEach((reason, count) -> err.printf("  %," + width + "d  %s%n", count, reason));
      if (refused.anyTimestampRefused()) {
        err.printf(
            "sendcap: a broker refuses records stamped more than"
                + " log.message.timestamp.after.max.ms (1 hour by default) ahead of its clock"
                + " or log.message.timestamp.before.max.ms behind it%s%n",
            timestamp == Stamp.SCHEDULED
                ? "; without --timestamp=scheduled records are stamped when produced"
                : "");
      }
      return 2;
    }
    spec.commandLine()
        .getOut()
        .printf("%,d records produced to %s, %,d bad lines%n", sent, topic, bad);
    return bad == 0 ? 0 : 1;
  }

  /**
   * The records the broker (or the producer) refused, counted by reason: each distinct error once,
   * the most frequent first. Messages that differ only in their numbers (the broker names each
   * refused record's timestamp and offset) are one error, shown as the first of them. Filled from
   * the producer's I/O thread, read once the producer is closed.
   */
  static final class Refusals {
    private static final Pattern NUMBER = Pattern.compile("-?\\d+");

    private record Reason(String first, long count) {}

    private final Map<String, Reason> byKind = new ConcurrentHashMap<>();

    void add(Exception e) {
      String reason = reason(e);
      byKind.merge(
          NUMBER.matcher(reason).replaceAll("#"),
          new Reason(reason, 1),
          (a, b) -> new Reason(a.first(), a.count() + b.count()));
    }

    long total() {
      return byKind.values().stream().mapToLong(Reason::count).sum();
    }

    /** Whether the broker refused records for their timestamps. */
    boolean anyTimestampRefused() {
      String invalidTimestamp = InvalidTimestampException.class.getSimpleName() + ":";
      String invalidRecord = InvalidRecordException.class.getSimpleName() + ": Timestamp ";
      return byKind.values().stream()
          .anyMatch(
              r -> r.first().startsWith(invalidTimestamp) || r.first().startsWith(invalidRecord));
    }

    void forEach(BiConsumer<String, Long> each) {
      byKind.values().stream()
          .sorted(Comparator.comparingLong(Reason::count).reversed().thenComparing(Reason::first))
          .forEach(r -> each.accept(r.first(), r.count()));
    }

    /** The exception's class and message, and those of its causes where they add something. */
    static String reason(Throwable e) {
      StringBuilder reason = new StringBuilder();
      for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
        String part =
            t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
        if (reason.indexOf(part) < 0) {
          reason.append(reason.length() == 0 ? "" : "; caused by ").append(part);
        }
      }
      return reason.toString();
    }
  }

  private static ScheduledSend sendOf(SpecificRecord record) {
    if (record instanceof Delivery d) {
      return d.getSend();
    }
    if (record instanceof Suppression s) {
      return s.getSend();
    }
    return (ScheduledSend) record;
  }
}
