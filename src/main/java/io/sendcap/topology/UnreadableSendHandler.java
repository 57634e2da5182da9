package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;

/**
 * The deserialization exception handler of the topology: a record that is not a send sendcap can
 * read goes to the dead-letter topic with the reason in its headers, is counted, and processing
 * continues.
 */
public final class UnreadableSendHandler extends LogAndContinueExceptionHandler {
  private Counter deadLetters;

  /** Creates the handler; Kafka Streams configures it with the dead-letter topic. */
  public UnreadableSendHandler() {}

  @Override
  public void configure(Map<String, ?> configs) {
    super.configure(configs);
    deadLetters = DeadLetterMeters.counter(configs, "unreadable");
  }

  @Override
  public Response handleError(
      ErrorHandlerContext context, ConsumerRecord<byte[], byte[]> record, Exception exception) {
    deadLetters.increment();
    return super.handleError(context, record, exception);
  }
}
