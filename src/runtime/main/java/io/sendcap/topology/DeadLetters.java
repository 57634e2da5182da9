package io.sendcap.topology;

import io.sendcap.config.SendcapConfig;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;

/**
 * Dead-letter records no larger than the producer may write.
 *
 * <p>Kafka Streams' dead-letter record is a copy of the input record (key, value, headers) with the
 * reason in {@code __streams.errors.*} headers and the exception's stack trace. A record too large
 * to be decided is also too large to be copied there, so a dead letter that would exceed {@link
 * #maxBytes} is written without its body: the key (when it is at most {@link
 * SendcapConfig#MAX_KEY_BYTES}), the reason, and the input's topic, partition and offset, from
 * which the send can be read again; {@value #DROPPED} says what was left out.
 */
final class DeadLetters {
  /** The header that names what a dead letter written without its body left out. */
  static final String DROPPED = "sendcap.errors.dropped";

  static final String EXCEPTION = "__streams.errors.exception";
  static final String MESSAGE = "__streams.errors.message";
  static final String STACKTRACE = "__streams.errors.stacktrace";
  static final String TOPIC = "__streams.errors.topic";
  static final String PARTITION = "__streams.errors.partition";
  static final String OFFSET = "__streams.errors.offset";

  /** The most characters of a reason a dead letter without its body keeps. */
  static final int MAX_MESSAGE_CHARS = 2048;

  private DeadLetters() {}

  /** The dead-letter topic of Kafka Streams properties {@code configs}, or null if none is set. */
  static String topic(Map<String, ?> configs) {
    Object topic = configs.get(StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG);
    return topic == null ? null : String.valueOf(topic);
  }

  /**
   * The most bytes a dead letter may take: what the producer of Kafka Streams properties {@code
   * configs} may write, less {@link SendcapConfig#OUTPUT_HEADROOM_BYTES} for the record's framing.
   */
  static int maxBytes(Map<String, ?> configs) {
    return SendcapConfig.maxRequestBytes(configs) - SendcapConfig.OUTPUT_HEADROOM_BYTES;
  }

  /** {@code records}, each one larger than {@code maxBytes} replaced by its copy without body. */
  static List<ProducerRecord<byte[], byte[]>> bounded(
      List<ProducerRecord<byte[], byte[]>> records, int maxBytes) {
    List<ProducerRecord<byte[], byte[]>> bounded = new ArrayList<>(records.size());
    for (ProducerRecord<byte[], byte[]> r : records) {
      bounded.add(size(r) <= maxBytes ? r : withoutBody(r));
    }
    return bounded;
  }

  /**
   * A dead letter without the body of the record it stands for: its error headers but the stack
   * trace, its key if it is short enough, and {@value #DROPPED}.
   */
  static ProducerRecord<byte[], byte[]> withoutBody(ProducerRecord<byte[], byte[]> full) {
    Headers headers = new RecordHeaders();
    long inputHeaders = 0;
    for (Header h : full.headers()) {
      if (h.key().startsWith("__streams.errors.")) {
        if (h.key().equals(MESSAGE) && h.value() != null) {
          headers.add(MESSAGE, utf8(truncated(new String(h.value(), StandardCharsets.UTF_8))));
        } else if (!h.key().equals(STACKTRACE)) {
          headers.add(h);
        }
      } else {
        inputHeaders += SizeCheckingDeserializer.size(h);
      }
    }
    byte[] key = full.key();
    boolean keyKept = key == null || key.length <= SendcapConfig.MAX_KEY_BYTES;
    headers.add(
        DROPPED,
        utf8(
            dropped(
                full.value() == null ? 0 : full.value().length,
                inputHeaders,
                keyKept ? 0 : key.length)));
    return new ProducerRecord<>(
        full.topic(), null, full.timestamp(), keyKept ? key : null, null, headers);
  }

  /**
   * A dead letter, without body, of an output that could not be written.
   *
   * @param topic the dead-letter topic
   * @param key the output's key, its send's
   * @param timestamp the output's timestamp, its send's record's
   * @param input the send's input topic
   * @param partition the send's input partition
   * @param offset the send's input offset, or -1 if it is not known
   * @param e why the output could not be written
   * @param reason the reason, for {@value #MESSAGE}
   * @param valueBytes the size of the output's value, or -1 if it could not be serialized
   */
  static ProducerRecord<byte[], byte[]> ofOutput(
      String topic,
      byte[] key,
      Long timestamp,
      String input,
      int partition,
      long offset,
      Exception e,
      String reason,
      long valueBytes) {
    Headers headers = new RecordHeaders();
    headers.add(EXCEPTION, utf8(e.getClass().getName()));
    headers.add(MESSAGE, utf8(truncated(reason)));
    headers.add(TOPIC, utf8(input));
    headers.add(PARTITION, utf8(Integer.toString(partition)));
    if (offset >= 0) {
      headers.add(OFFSET, utf8(Long.toString(offset)));
    }
    boolean keyKept = key == null || key.length <= SendcapConfig.MAX_KEY_BYTES;
    headers.add(
        DROPPED, utf8(dropped(Math.max(valueBytes, 0), 0, keyKept ? 0 : key.length) + ", output"));
    return new ProducerRecord<>(topic, null, timestamp, keyKept ? key : null, null, headers);
  }

  /** The bytes of a record's key, value and headers. */
  static long size(ProducerRecord<byte[], byte[]> r) {
    long bytes =
        (r.key() == null ? 0 : r.key().length) + (r.value() == null ? 0 : r.value().length);
    return bytes + SizeCheckingDeserializer.size(r.headers());
  }

  private static String dropped(long value, long headers, long key) {
    return "value "
        + value
        + " bytes, input headers "
        + headers
        + " bytes"
        + (key > 0 ? ", key " + key + " bytes" : "");
  }

  private static String truncated(String message) {
    if (message == null) {
      return "";
    }
    return message.length() <= MAX_MESSAGE_CHARS
        ? message
        : message.substring(0, MAX_MESSAGE_CHARS) + "...";
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
