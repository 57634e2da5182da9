package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Response;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.Result;
import org.apache.kafka.streams.errors.ProductionExceptionHandler.SerializationExceptionOrigin;
import org.apache.kafka.streams.processor.TaskId;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An output the producer cannot write costs its send, which goes to the dead-letter topic as a
 * small record, never the stream thread.
 */
class UnwritableOutputHandlerTest {
  private static final byte[] KEY = "42".getBytes(StandardCharsets.UTF_8);
  private static final long AT = 1_700_000_000_000L;

  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final UnwritableOutputHandler handler = new UnwritableOutputHandler();

  /** The context of the record being processed when the output was forwarded. */
  private record Context(
      String topic,
      int partition,
      long offset,
      Headers headers,
      String processorNodeId,
      TaskId taskId,
      long timestamp,
      byte[] sourceRawKey,
      byte[] sourceRawValue)
      implements ErrorHandlerContext {}

  @BeforeEach
  void configure() {
    handler.configure(
        Map.of(
            StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG,
            "campaign-sends-dlq",
            UnwritableOutputHandler.INPUT_TOPIC_CONFIG,
            "campaign-sends",
            DeadLetterMeters.CONFIG,
            metrics));
  }

  private static Context processing(byte[] key, long timestamp, long offset) {
    return new Context(
        "campaign-sends",
        3,
        offset,
        new RecordHeaders(),
        "decide",
        new TaskId(0, 3),
        timestamp,
        key,
        new byte[3_000_000]);
  }

  @Test
  void aDeliveryTooLargeToWriteGoesToTheDeadLetterTopicWithoutItsBody() {
    ProducerRecord<byte[], byte[]> delivery =
        new ProducerRecord<>("deliveries", null, AT, KEY, new byte[3_000_000], new RecordHeaders());
    RecordTooLargeException tooLarge =
        new RecordTooLargeException(
            "The message is 3000139 bytes when serialized which is larger than 1048576");

    Response response = handler.handleError(processing(KEY, AT, 17), delivery, tooLarge);

    assertThat(response.result()).isEqualTo(Result.RESUME);
    assertThat(response.deadLetterQueueRecords()).hasSize(1);
    ProducerRecord<byte[], byte[]> letter = response.deadLetterQueueRecords().get(0);
    assertThat(letter.topic()).isEqualTo("campaign-sends-dlq");
    assertThat(letter.value()).isNull();
    assertThat(letter.key()).isEqualTo(KEY);
    assertThat(letter.timestamp()).isEqualTo(AT);
    assertThat(DeadLetters.size(letter)).isLessThan(4096);
    assertThat(header(letter, "__streams.errors.message"))
        .startsWith(
            "its output to deliveries could not be written: The message is 3000139 bytes when"
                + " serialized");
    assertThat(header(letter, "__streams.errors.exception"))
        .isEqualTo(RecordTooLargeException.class.getName());
    assertThat(header(letter, "__streams.errors.topic")).isEqualTo("campaign-sends");
    assertThat(header(letter, "__streams.errors.partition")).isEqualTo("3");
    assertThat(header(letter, "__streams.errors.offset")).isEqualTo("17");
    assertThat(header(letter, "sendcap.errors.dropped")).startsWith("value 3000000 bytes");
    assertThat(
            metrics.get("sendcap.sends.dead.letters").tag("reason", "unwritable").counter().count())
        .isEqualTo(1);
  }

  /**
   * A decision forwarded while another record is processed (a batch decided later) or from the
   * punctuator: the context's offset is not the send's, so the dead letter names no offset.
   */
  @Test
  void anOutputForwardedWhileAnotherRecordIsProcessedNamesNoOffset() {
    ProducerRecord<byte[], byte[]> delivery =
        new ProducerRecord<>("suppressed", null, AT, KEY, new byte[10], new RecordHeaders());
    Context punctuation =
        new Context(null, -1, -1, new RecordHeaders(), null, new TaskId(0, 3), AT, null, null);

    ProducerRecord<byte[], byte[]> letter =
        handler
            .handleError(punctuation, delivery, new RecordTooLargeException("too large"))
            .deadLetterQueueRecords()
            .get(0);

    assertThat(header(letter, "__streams.errors.topic")).isEqualTo("campaign-sends");
    assertThat(header(letter, "__streams.errors.partition")).isEqualTo("3");
    assertThat(letter.headers().lastHeader("__streams.errors.offset")).isNull();
    assertThat(
            handler
                .handleError(
                    processing("7".getBytes(StandardCharsets.UTF_8), AT, 5),
                    delivery,
                    new RecordTooLargeException("too large"))
                .deadLetterQueueRecords()
                .get(0)
                .headers()
                .lastHeader("__streams.errors.offset"))
        .as("another send's record")
        .isNull();
  }

  @Test
  void aDeadLetterTooLargeToWriteIsWrittenAgainWithoutItsBody() {
    Headers headers = new RecordHeaders();
    headers.add("trace-id", new byte[] {1});
    headers.add("__streams.errors.message", "not a send".getBytes(StandardCharsets.UTF_8));
    headers.add("__streams.errors.stacktrace", new byte[100_000]);
    ProducerRecord<byte[], byte[]> copy =
        new ProducerRecord<>("campaign-sends-dlq", null, AT, KEY, new byte[3_000_000], headers);

    Response response =
        handler.handleError(processing(KEY, AT, 1), copy, new RecordTooLargeException("large"));

    ProducerRecord<byte[], byte[]> letter = response.deadLetterQueueRecords().get(0);
    assertThat(letter.value()).isNull();
    assertThat(header(letter, "__streams.errors.message")).isEqualTo("not a send");
    assertThat(letter.headers().lastHeader("__streams.errors.stacktrace")).isNull();
    assertThat(letter.headers().lastHeader("trace-id")).isNull();
    assertThat(header(letter, "sendcap.errors.dropped"))
        .isEqualTo("value 3000000 bytes, input headers 9 bytes");
    assertThat(
            handler
                .handleError(processing(KEY, AT, 1), letter, new RecordTooLargeException("large"))
                .deadLetterQueueRecords())
        .as("nothing smaller to write")
        .isEmpty();
  }

  @Test
  void anOutputThatCannotBeSerializedGoesToTheDeadLetterTopic() {
    ProducerRecord<byte[], Object> delivery =
        new ProducerRecord<>("deliveries", null, AT, KEY, new Object(), new RecordHeaders());

    Response response =
        handler.handleSerializationError(
            processing(KEY, AT, 9),
            delivery,
            new SerializationException("cannot encode"),
            SerializationExceptionOrigin.VALUE);

    assertThat(response.result()).isEqualTo(Result.RESUME);
    ProducerRecord<byte[], byte[]> letter = response.deadLetterQueueRecords().get(0);
    assertThat(header(letter, "__streams.errors.message"))
        .isEqualTo(
            "its output to deliveries could not be serialized (value):"
                + " org.apache.kafka.common.errors.SerializationException: cannot encode");
    assertThat(header(letter, "__streams.errors.offset")).isEqualTo("9");
  }

  /**
   * Under exactly_once_v2 the producer aborts the transaction of a record it refuses, dead letters
   * included: the thread fails rather than count a dead letter that is never written.
   */
  @Test
  void underExactlyOnceARefusedRecordFailsTheThreadUncounted() {
    UnwritableOutputHandler transactional = new UnwritableOutputHandler();
    transactional.configure(
        Map.of(
            StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG,
            "campaign-sends-dlq",
            StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            StreamsConfig.EXACTLY_ONCE_V2,
            DeadLetterMeters.CONFIG,
            metrics));
    ProducerRecord<byte[], byte[]> delivery =
        new ProducerRecord<>("deliveries", null, AT, KEY, new byte[10], new RecordHeaders());

    Response response =
        transactional.handleError(
            processing(KEY, AT, 1), delivery, new RecordTooLargeException("too large"));

    assertThat(response.result()).isEqualTo(Result.FAIL);
    assertThat(response.deadLetterQueueRecords()).isEmpty();
    assertThat(
            metrics.get("sendcap.sends.dead.letters").tag("reason", "unwritable").counter().count())
        .isZero();
  }

  @Test
  void otherErrorsAreHandledAsByKafkaStreamsDefault() {
    ProducerRecord<byte[], byte[]> delivery =
        new ProducerRecord<>("deliveries", null, AT, KEY, new byte[10], new RecordHeaders());

    assertThat(
            handler
                .handleError(processing(KEY, AT, 1), delivery, new UnknownServerException("boom"))
                .result())
        .isEqualTo(Result.FAIL);
    assertThat(
            handler
                .handleError(processing(KEY, AT, 1), delivery, new TimeoutException("slow"))
                .result())
        .isEqualTo(Result.RETRY);
  }

  private static String header(ProducerRecord<byte[], byte[]> record, String name) {
    return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }
}
