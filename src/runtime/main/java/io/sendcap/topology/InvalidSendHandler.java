package io.sendcap.topology;

import io.micrometer.core.instrument.Counter;
import java.util.Map;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.processor.api.Record;

/**
 * The processing exception handler of the topology: a send that was read but is invalid goes to the
 * dead-letter topic, with the reason in its headers, and processing continues; any other exception
 * fails the stream thread, so that a bug is not mistaken for bad input. A dead letter that would be
 * too large to write goes without its body ({@link DeadLetters}).
 */
public final class InvalidSendHandler extends LogAndContinueProcessingExceptionHandler {
  private Counter deadLetters;
  private int maxBytes;

  /** Creates the handler; Kafka Streams configures it with the dead-letter topic. */
  public InvalidSendHandler() {}

  @Override
  public void configure(Map<String, ?> configs) {
    super.configure(configs);
    deadLetters = DeadLetterMeters.counter(configs, "invalid");
    maxBytes = DeadLetters.maxBytes(configs);
  }

  @Override
  public Response handleError(ErrorHandlerContext context, Record<?, ?> record, Exception e) {
    if (!(e instanceof InvalidSendException)) {
      return Response.fail();
    }
    deadLetters.increment();
    Response response = super.handleError(context, record, e);
    return Response.resume(DeadLetters.bounded(response.deadLetterQueueRecords(), maxBytes));
  }
}
