package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The deserialization exception handler of the topology: a record that is not a send sendcap can
 * read goes to the dead-letter topic with the reason in its headers, is counted, and processing
 * continues. So does a send too large to decide ({@link SendTooLargeException}), counted apart; a
 * dead letter that would be too large to write itself goes without its body ({@link DeadLetters}).
 *
 * <p>A record that could not be read because the schema registry could not be reached is no bad
 * record. Its stream thread waits for the registry ({@link RegistryRetryingDeserializer}), so such
 * a record gets here only when the application stops during the wait: it fails the stream thread,
 * and is read again from the last commit by the next run, not lost.
 */
public final class UnreadableSendHandler extends LogAndContinueExceptionHandler {
  private static final Logger LOG = LoggerFactory.getLogger(UnreadableSendHandler.class);

  private Counter deadLetters;
  private Counter tooLarge;
  private int maxBytes;

  /** Creates the handler; Kafka Streams configures it with the dead-letter topic. */
  public UnreadableSendHandler() {}

  @Override
  public void configure(Map<String, ?> configs) {
    super.configure(configs);
    deadLetters = DeadLetterMeters.counter(configs, "unreadable");
    tooLarge = DeadLetterMeters.counter(configs, "too-large");
    maxBytes = DeadLetters.maxBytes(configs);
  }

  @Override
  public Response handleError(
      ErrorHandlerContext context, ConsumerRecord<byte[], byte[]> record, Exception exception) {
    for (Throwable t = exception; t != null; t = t.getCause()) {
      if (t instanceof SchemaRegistryUnavailableException) {
        LOG.info(
            "gave up the record at {}-{} offset {} ({}); it is read again from the last commit",
            record.topic(),
            record.partition(),
            record.offset(),
            t.getMessage());
        return Response.fail();
      }
    }
    boolean large = isTooLarge(exception);
    (large ? tooLarge : deadLetters).increment();
    Response response = super.handleError(context, record, exception);
    // a send too large to decide goes without its body, as the issue of its size is the reason
    return Response.resume(
        DeadLetters.bounded(response.deadLetterQueueRecords(), large ? 0 : maxBytes));
  }

  private static boolean isTooLarge(Exception exception) {
    for (Throwable t = exception; t != null; t = t.getCause()) {
      if (t instanceof SendTooLargeException) {
        return true;
      }
    }
    return false;
  }
}
