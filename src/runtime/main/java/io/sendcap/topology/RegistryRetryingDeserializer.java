package io.sendcap.topology;

import io.sendcap.serde.SchemaRegistryUnavailableException;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * The deserializer of the input topic: the configured one, except that a record that cannot be read
 * because the schema registry cannot be reached is tried again, on the same stream thread and with
 * backoff ({@link RegistryOutage}), until the registry answers. Its answer then decides: the send,
 * or a {@link SerializationException} for the dead-letter topic (an id the registry does not know,
 * a writer schema sendcap's cannot read). A registry that refuses sendcap's credentials ({@code
 * SchemaRegistryConfigurationException}, a kind of {@link SchemaRegistryUnavailableException}) is
 * waited for the same way: the setting is wrong, not the record, and health says which to fix.
 *
 * <p>This is where a registry outage surfaces while records flow: the Confluent deserializer
 * fetches the writer schema of an id it has not seen yet. The serializers of the outputs never ask
 * the registry then, because {@link SendcapTopology#build} asks for their ids once, up front.
 *
 * <p>Kafka Streams gives a record whose deserializer throws two fates only: its deserialization
 * handler drops it (to the dead-letter topic, which would lose a valid send) or fails the stream
 * thread. A failed thread is replaced and its tasks resume from the last commit, so nothing is
 * lost; but its consumer stays in the group until its session times out (45 s by default) before
 * the replacement gets the tasks, a thread fails at each try while the outage lasts, and every
 * replacement counts against {@code health.live.max-thread-replacements}. Pausing Kafka Streams, as
 * a Redis outage does, would not keep the record back either: a paused instance goes on polling,
 * and deserializes the head of each partition's queue as records arrive. Waiting in the
 * deserializer keeps the record where it is: nothing after it in its partition is read (each user's
 * sends stay in order), nothing is dead-lettered, no thread fails, and reading resumes within a
 * second of the registry answering. Only the stream thread that needs the registry waits; the
 * others go on with the records whose schemas they know.
 *
 * <p>While it waits, the thread neither polls nor commits. Under {@code exactly_once_v2}, a
 * transaction it had open is aborted by the broker after the producer's {@code
 * transaction.timeout.ms} (10 s in Kafka Streams); when the thread resumes, Kafka Streams finds its
 * producer fenced, closes its tasks without committing and rejoins the group, and the sends of the
 * aborted transaction are read and decided again (the limiter is idempotent by message id). After
 * {@code max.poll.interval.ms} (5 min) its consumer leaves the group, and its partitions move to
 * other instances. Either way, each send is decided once in the committed outputs. When the
 * application stops, the wait ends with the failure, which fails the thread (see {@link
 * UnreadableSendHandler}); the record is read again from the last commit by the next run.
 *
 * @param <T> the type of the records
 */
final class RegistryRetryingDeserializer<T> implements Deserializer<T> {
  private final Deserializer<T> delegate;
  private final RegistryOutage outage;

  RegistryRetryingDeserializer(Deserializer<T> delegate, RegistryOutage outage) {
    this.delegate = delegate;
    this.outage = outage;
  }

  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    delegate.configure(configs, isKey);
  }

  @Override
  public T deserialize(String topic, byte[] data) {
    return read(() -> delegate.deserialize(topic, data));
  }

  @Override
  public T deserialize(String topic, Headers headers, byte[] data) {
    return read(() -> delegate.deserialize(topic, headers, data));
  }

  private T read(Supplier<T> attempt) {
    for (int failures = 0; ; ) {
      T value;
      try {
        value = attempt.get();
      } catch (SchemaRegistryUnavailableException e) {
        outage.await(e, ++failures);
        continue;
      } catch (RuntimeException e) {
        if (failures > 0) {
          outage.answered();
        }
        throw e;
      }
      if (failures > 0) {
        outage.answered();
      }
      return value;
    }
  }

  @Override
  public void close() {
    delegate.close();
  }
}
