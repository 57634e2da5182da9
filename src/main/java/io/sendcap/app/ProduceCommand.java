package io.sendcap.app;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sendcap produce}: JSON lines to one of sendcap's topics, as Avro records, keyed by user id
 * and stamped with the send's scheduled time, as the campaign engine produces them.
 */
@Command(
    name = "produce",
    mixinStandardHelpOptions = true,
    description =
        "Produces the JSON lines of a file (Avro field names; timestamps as ISO-8601 or epoch"
            + " ms) to a sendcap topic. Each bad line is reported with its number; the good ones"
            + " are still sent. Exits 1 if a line was bad.")
final class ProduceCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Mixin ConfigOptions options;

  @Option(
      names = "--topic",
      required = true,
      description = "The topic: the input, deliveries or suppressed topic of the configuration.")
  String topic;

  @Option(names = "--file", required = true, description = "The JSON lines, one record a line.")
  Path file;

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
    SingleObjectAvroSerde<T> serde = new SingleObjectAvroSerde<>(type);
    PrintWriter err = spec.commandLine().getErr();
    AtomicLong failed = new AtomicLong();
    long sent = 0;
    long bad = 0;
    Properties conf = SendcapTopics.clientProperties(config);
    conf.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    conf.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) SendcapTopics.BROKER_TIMEOUT.toMillis());
    try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
        KafkaProducer<byte[], byte[]> producer =
            new KafkaProducer<>(conf, new ByteArraySerializer(), new ByteArraySerializer());
        ProgressBar bar =
            new ProgressBarBuilder()
                .setTaskName("produced")
                .setInitialMax(lines)
                .setConsumer(new ConsoleProgressBarConsumer(System.err))
                .build()) {
      String line;
      long number = 0;
      while ((line = in.readLine()) != null) {
        number++;
        bar.step();
        if (line.isBlank()) {
          continue;
        }
        T record;
        try {
          record = AvroJson.read(line, type);
        } catch (AvroJson.JsonMismatchException e) {
          err.printf("%s:%d: %s%n", file, number, e.getMessage());
          bad++;
          continue;
        }
        ScheduledSend send = sendOf(record);
        byte[] key = Long.toString(send.getUserId()).getBytes(StandardCharsets.UTF_8);
        long timestamp = send.getScheduledAt().toEpochMilli();
        producer.send(
            new ProducerRecord<>(topic, null, timestamp, key, serde.encode(record)),
            (metadata, e) -> {
              if (e != null) {
                failed.incrementAndGet();
              }
            });
        sent++;
      }
      producer.flush();
    }
    if (failed.get() > 0) {
      err.printf("sendcap: %,d records could not be written to %s%n", failed.get(), topic);
      return 2;
    }
    spec.commandLine()
        .getOut()
        .printf("%,d records produced to %s, %,d bad lines%n", sent, topic, bad);
    return bad == 0 ? 0 : 1;
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
