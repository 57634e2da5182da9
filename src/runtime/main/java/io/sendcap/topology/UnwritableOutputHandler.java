package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.DefaultProductionExceptionHandler;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProductionExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The production exception handler of the topology, the last line of defence behind {@code
 * cap.max-send-bytes}: an output the producer refuses as too large ({@link
 * RecordTooLargeException}, from the producer or a topic's {@code max.message.bytes}), or that
 * cannot be serialized, goes to the dead-letter topic as a small record (the reason, the send's
 * key, its input topic and partition and, when the handler's context is the send's own record, its
 * offset; never its body), is counted as {@code unwritable}, and processing continues. A dead
 * letter refused as too large is written again without its body. Any other error is handled as
 * Kafka Streams' default handler does (retried if retriable, else the stream thread fails).
 *
 * <p>The offset is known only for an output forwarded while its own send was processed: a batch
 * decided later is forwarded while another record is processed, or from the punctuator, and then
 * the dead letter names the send by key and timestamp. A refusal by the broker arrives on the
 * producer's own thread, where a first record to the dead-letter topic waits for its metadata,
 * which only that thread fetches, until {@code max.block.ms}: the task is then re-initialised,
 * reads its sends again from its last commit, and the dead letter is written the second time.
 *
 * <p>Under {@code exactly_once_v2} the producer aborts its transaction on a record it refuses,
 * whatever this handler answers, and fails every later send of the transaction with the same
 * exception: a dead letter would be aborted with it, so a refused record fails the stream thread
 * there, with one line that says what to change. The bound on the input ({@code
 * cap.max-send-bytes}, checked before any decision) is what keeps outputs writable under {@code
 * exactly_once_v2}; this handler covers {@code at_least_once}, and outputs that cannot be
 * serialized under either guarantee (serializing comes before the producer).
 */
public final class UnwritableOutputHandler implements ProductionExceptionHandler {
  private static final Logger LOG = LoggerFactory.getLogger(UnwritableOutputHandler.class);

  /** The Kafka Streams property that names the input topic, for the dead letters' headers. */
  static final String INPUT_TOPIC_CONFIG = "sendcap.topic.input";

  private final ProductionExceptionHandler otherwise = new DefaultProductionExceptionHandler();
  private Counter unwritable;
  private String deadLetterTopic;
  private String inputTopic;
  private boolean exactlyOnce;

  /** Creates the handler; Kafka Streams configures it with the dead-letter topic. */
  public UnwritableOutputHandler() {}

  @Override
  public void configure(Map<String, ?> configs) {
    otherwise.configure(configs);
    unwritable = DeadLetterMeters.counter(configs, "unwritable");
    deadLetterTopic = DeadLetters.topic(configs);
    Object input = configs.get(INPUT_TOPIC_CONFIG);
    inputTopic = input == null ? null : String.valueOf(input);
    exactlyOnce =
        StreamsConfig.EXACTLY_ONCE_V2.equals(
            String.valueOf(configs.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG)));
  }

  @Override
  public Response handleError(
      ErrorHandlerContext context, ProducerRecord<byte[], byte[]> record, Exception exception) {
    if (!(exception instanceof RecordTooLargeException
        || exception instanceof RecordBatchTooLargeException)) {
      return otherwise.handleError(context, record, exception);
    }
    if (exactlyOnce) {
      LOG.error(
          "a record to {} was refused as too large; under exactly_once_v2 its transaction is"
              + " aborted, and the stream thread fails. Lower cap.max-send-bytes below what every"
              + " output topic accepts (max.message.bytes), or raise that: {}",
          record.topic(),
          exception.getMessage());
      return Response.fail();
    }
    if (record.topic().equals(deadLetterTopic)) {
      if (record.value() == null) {
        LOG.error(
            "a dead letter without body could not be written to {} either; it is dropped: {}",
            deadLetterTopic,
            exception.getMessage());
        return Response.resume();
      }
      return Response.resume(List.of(DeadLetters.withoutBody(record)));
    }
    String reason =
        "its output to "
            + record.topic()
            + " could not be written: "
            + exception.getMessage()
            + " (raise the producer's max.request.size and the topic's max.message.bytes, or"
            + " lower cap.max-send-bytes)";
    return deadLetter(
        context,
        record.key(),
        record.timestamp(),
        exception,
        reason,
        record.value() == null ? 0 : record.value().length);
  }

  @Override
  @SuppressWarnings("rawtypes")
  public Response handleSerializationError(
      ErrorHandlerContext context,
      ProducerRecord record,
      Exception exception,
      SerializationExceptionOrigin origin) {
    byte[] key = record.key() instanceof byte[] bytes ? bytes : null;
    String reason =
        "its output to "
            + record.topic()
            + " could not be serialized ("
            + origin.name().toLowerCase(Locale.ROOT)
            + "): "
            + exception;
    return deadLetter(context, key, record.timestamp(), exception, reason, -1);
  }

  private Response deadLetter(
      ErrorHandlerContext context,
      byte[] key,
      Long timestamp,
      Exception exception,
      String reason,
      long valueBytes) {
    unwritable.increment();
    if (deadLetterTopic == null) {
      LOG.error("a decision is dropped, as no dead-letter topic is set: {}", reason);
      return Response.resume();
    }
    boolean ownRecord =
        context.topic() != null
            && Arrays.equals(context.sourceRawKey(), key)
            && timestamp != null
            && context.timestamp() == timestamp;
    String input = context.topic() != null ? context.topic() : inputTopic;
    int partition = context.taskId() == null ? context.partition() : context.taskId().partition();
    LOG.warn(
        "a send of {}-{} (key of {} bytes, timestamp {}) goes to {} without its body: {}",
        input,
        partition,
        key == null ? 0 : key.length,
        timestamp,
        deadLetterTopic,
        reason);
    return Response.resume(
        List.of(
            DeadLetters.ofOutput(
                deadLetterTopic,
                key,
                timestamp,
                input,
                partition,
                ownRecord ? context.offset() : -1,
                exception,
                reason,
                valueBytes)));
  }
}
