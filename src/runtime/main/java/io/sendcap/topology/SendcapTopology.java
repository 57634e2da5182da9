package io.sendcap.topology;

import io.micrometer.core.instrument.MeterRegistry;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.AvroSerdes;
import io.sendcap.serde.ConfluentAvroSerde;
import io.sendcap.serde.Decoded;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.time.InstantSource;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TopologyConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;

/**
 * The sendcap topology: campaign sends in, each decided against its user's caps, out to the
 * deliveries or the suppressed topic; records that cannot be read go to the dead-letter topic.
 *
 * <p>Called the same way by the application and by {@code TopologyTestDriver} tests.
 */
public final class SendcapTopology {
  /** The changelogged store of where each task's undecided sends start (see PendingBuffer). */
  public static final String PENDING_STORE = "pending-sends";

  /** The global store of segment chunks waiting for their manifest. */
  public static final String SEGMENT_STORE = "segment-chunks";

  /** The global store of the newest published policies. */
  public static final String POLICY_STORE = "published-policies";

  private SendcapTopology() {}

  /**
   * Builds the topology.
   *
   * @param config the application settings
   * @param policies the caps of each segment; the topology's global store keeps them up to date
   *     from the policies topic
   * @param segments where each user's segment is looked up; the topology's global store keeps it up
   *     to date from the {@code segments} topic
   * @param capStores opens a cap store for each task, at its first batch
   * @param quotas the instance's share of the global caps, for every task
   * @param wallClock the wall clock (decision time under {@code cap.clock=wall}, batch timing)
   * @param backpressure what holds sends back while the limiter is unreachable in block mode
   * @param registryOutage where a stream thread waits while the schema registry cannot be reached
   *     for a send it reads (see {@link RegistryRetryingDeserializer})
   * @param undecided counts the sends read and not decided yet, and drains them before a shutdown
   * @param metrics where the decisions are counted
   * @throws org.apache.kafka.common.errors.SerializationException if the schema registry refuses or
   *     lacks the schema of an output (see {@link ConfluentAvroSerde#schemaId})
   * @throws io.sendcap.serde.SchemaRegistryUnavailableException if the schema registry cannot be
   *     reached for the ids of the outputs' schemas
   */
  public static Topology build(
      SendcapConfig config,
      LivePolicies policies,
      SegmentRegistry segments,
      Supplier<CapStore> capStores,
      GlobalQuotas quotas,
      InstantSource wallClock,
      Backpressure backpressure,
      RegistryOutage registryOutage,
      Undecided undecided,
      MeterRegistry metrics) {
    Map<String, Object> props = new HashMap<>();
    config.streams().forEach((k, v) -> props.put(String.valueOf(k), v));
    props.putAll(config.schemaRegistry());
    props.putAll(config.avroLimits().configs());
    Serde<ScheduledSend> sends = AvroSerdes.of(ScheduledSend.class, config.avroSerde(), props);
    if (sends instanceof SingleObjectAvroSerde<ScheduledSend> singleObject) {
      config.writerSchemas().forEach(singleObject::addWriterSchema);
    } else if (sends instanceof ConfluentAvroSerde<ScheduledSend> confluent) {
      config.writerSchemas().forEach(confluent::addWriterSchema);
    }
    Serde<Delivery> deliveries = AvroSerdes.of(Delivery.class, config.avroSerde(), props);
    Serde<Suppression> suppressions = AvroSerdes.of(Suppression.class, config.avroSerde(), props);
    SendcapConfig.Topics topics = config.topics();
    // The outputs' schema ids, asked for now and cached for good: no output ever waits for the
    // registry, and an outage can only hold back reading (see RegistryRetryingDeserializer).
    if (deliveries instanceof ConfluentAvroSerde<Delivery> confluent) {
      confluent.schemaId(topics.deliveries());
    }
    if (suppressions instanceof ConfluentAvroSerde<Suppression> confluent) {
      confluent.schemaId(topics.suppressed());
    }
    Deserializer<Decoded<ScheduledSend>> inputValues =
        new SizeCheckingDeserializer<>(
            new RegistryRetryingDeserializer<>(keepingBodies(sends), registryOutage),
            config.maxSendBytes());
    Serde<Decoded<ScheduledSend>> input =
        Serdes.serdeFrom(
            (topic, send) ->
                send == null ? null : sends.serializer().serialize(topic, send.record()),
            inputValues);
    InputReplay replay = new KafkaInputReplay(config, inputValues);
    StoreBuilder<?> pendingStore =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(PENDING_STORE), Serdes.Long(), Serdes.ByteArray())
            .withCachingEnabled();
    ProcessorSupplier<byte[], Decoded<ScheduledSend>, byte[], OutputRecord> decide =
        new ProcessorSupplier<>() {
          @Override
          public Processor<byte[], Decoded<ScheduledSend>, byte[], OutputRecord> get() {
            return new CapProcessor(
                config,
                policies,
                segments,
                capStores,
                wallClock,
                quotas,
                backpressure,
                undecided,
                metrics,
                PENDING_STORE,
                replay);
          }

          @Override
          public Set<StoreBuilder<?>> stores() {
            return Set.of(pendingStore);
          }
        };

    StreamsBuilder builder =
        new StreamsBuilder(new TopologyConfig(new StreamsConfig(config.streams())));
    builder.addGlobalStore(
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(SEGMENT_STORE), Serdes.String(), Serdes.ByteArray())
            .withLoggingDisabled(),
        topics.segments(),
        Consumed.with(Serdes.String(), Serdes.ByteArray()).withName("segments"),
        () ->
            new SegmentStoreProcessor(segments, config.segmentsMaxBytes(), SEGMENT_STORE, metrics));
    builder.addGlobalStore(
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(POLICY_STORE), Serdes.String(), Serdes.ByteArray())
            .withLoggingDisabled(),
        topics.policies(),
        Consumed.with(Serdes.String(), Serdes.ByteArray()).withName("policies"),
        () -> new PolicyStoreProcessor(policies, POLICY_STORE, metrics));
    Serde<byte[]> keys =
        Serdes.serdeFrom(new ByteArraySerializer(), SizeCheckingDeserializer.keys());
    builder.stream(topics.input(), Consumed.with(keys, input).withName("sends"))
        .process(decide, Named.as("decide"))
        .to(
            (key, out, context) ->
                out.record() instanceof Delivery
                    ? topics.deliveries()
                    : out.deadLetter() ? topics.deadLetters() : topics.suppressed(),
            Produced.with(
                    Serdes.ByteArray(),
                    outputs(deliveries, suppressions, deadLetters(sends, topics.input())))
                .withName("decisions"));
    return builder.build();
  }

  /**
   * The input's deserializer: each send decoded and, when it was written in sendcap's own schema,
   * its Avro body kept for the outputs to copy (with a serde of another kind, none).
   */
  private static Deserializer<Decoded<ScheduledSend>> keepingBodies(Serde<ScheduledSend> sends) {
    if (sends instanceof SingleObjectAvroSerde<ScheduledSend> singleObject) {
      return (topic, bytes) -> singleObject.decodeKeepingBody(bytes);
    }
    if (sends instanceof ConfluentAvroSerde<ScheduledSend> confluent) {
      return confluent::decodeKeepingBody;
    }
    Deserializer<ScheduledSend> plain = sends.deserializer();
    return (topic, bytes) -> {
      ScheduledSend send = plain.deserialize(topic, bytes);
      return send == null ? null : new Decoded<>(send, null, bytes == null ? 0 : bytes.length);
    };
  }

  /**
   * The serde of the outputs, which sendcap only writes: a delivery or a suppression, each written
   * with its own topic's serde, the send it embeds written from its input body where there is one
   * (with a serde of another kind, encoded as the rest).
   */
  private static Serde<OutputRecord> outputs(
      Serde<Delivery> deliveries,
      Serde<Suppression> suppressions,
      Serializer<OutputRecord> deadLetters) {
    Serializer<OutputRecord> delivery = writer(deliveries, Delivery.class);
    Serializer<OutputRecord> suppression = writer(suppressions, Suppression.class);
    return Serdes.serdeFrom(
        (topic, out) ->
            out.record() instanceof Delivery
                ? delivery.serialize(topic, out)
                : out.deadLetter()
                    ? deadLetters.serialize(topic, out)
                    : suppression.serialize(topic, out),
        (topic, bytes) -> {
          throw new UnsupportedOperationException("sendcap's outputs are written, not read");
        });
  }

  /**
   * The serializer of the sends that go to the dead-letter topic from the decide step: each written
   * as the input's serde writes a send under the input topic, so that it can be produced there
   * again once its cause is fixed.
   */
  private static Serializer<OutputRecord> deadLetters(Serde<ScheduledSend> sends, String input) {
    Serializer<ScheduledSend> serializer = sends.serializer();
    return (topic, out) -> serializer.serialize(input, out.send());
  }

  /** The serializer of the outputs of one type. */
  private static <T extends SpecificRecord> Serializer<OutputRecord> writer(
      Serde<T> serde, Class<T> type) {
    if (serde instanceof SingleObjectAvroSerde<T> singleObject) {
      return (topic, out) ->
          singleObject.encode(type.cast(out.record()), out.send(), out.sendBody());
    }
    if (serde instanceof ConfluentAvroSerde<T> confluent) {
      return (topic, out) ->
          confluent.encode(topic, type.cast(out.record()), out.send(), out.sendBody());
    }
    Serializer<T> plain = serde.serializer();
    return (topic, out) -> plain.serialize(topic, type.cast(out.record()));
  }

  /**
   * The Kafka Streams properties to run the topology with, counting dead letters in {@code
   * metrics}.
   */
  public static Properties streamsProperties(SendcapConfig config, MeterRegistry metrics) {
    Properties props = streamsProperties(config);
    props.put(DeadLetterMeters.CONFIG, metrics);
    return props;
  }

  /**
   * The Kafka Streams properties to run the topology with: the configured ones, plus the
   * dead-letter topic for records that cannot be read, hold invalid values, are too large to decide
   * or whose decisions cannot be written.
   */
  public static Properties streamsProperties(SendcapConfig config) {
    Properties props = new Properties();
    props.putAll(config.streams());
    props.put(
        StreamsConfig.DESERIALIZATION_EXCEPTION_HANDLER_CLASS_CONFIG,
        UnreadableSendHandler.class.getName());
    props.put(
        StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG,
        InvalidSendHandler.class.getName());
    props.put(
        StreamsConfig.PRODUCTION_EXCEPTION_HANDLER_CLASS_CONFIG,
        UnwritableOutputHandler.class.getName());
    props.put(UnwritableOutputHandler.INPUT_TOPIC_CONFIG, config.topics().input());
    props.put(
        StreamsConfig.ERRORS_DEAD_LETTER_QUEUE_TOPIC_NAME_CONFIG, config.topics().deadLetters());
    return props;
  }
}
