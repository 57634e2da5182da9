package io.sendcap.cli;

import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.AvroSerdes;
import io.sendcap.serde.ConfluentAvroSerde;
import io.sendcap.serde.SchemaRegistrySettings;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;

/**
 * The Avro serdes of the command-line tools ({@code produce}, {@code consume}, {@code report} and
 * the demo's tally), from the configuration they load: they write in the framing of {@code
 * avro.serde}, as the application does, and read both framings, as the application's {@code
 * confluent} serde does. Built on {@link AvroSerdes} and {@link ConfluentAvroSerde}.
 *
 * <p>Registry problems a user can fix (an invalid setting, a registry that cannot be reached or
 * refuses the schema) are {@link IllegalArgumentException}s, printed as one line.
 */
public final class ToolSerdes {
  private ToolSerdes() {}

  /**
   * Encodes records of a generated class for a topic in the configured framing. With {@code
   * avro.serde=confluent} the schema is registered (or, with {@code auto.register.schemas=false},
   * looked up) under the topic's subject now, as the application does at start-up.
   *
   * @throws IllegalArgumentException if the registry settings are invalid, or the registry cannot
   *     be reached or refuses the schema
   */
  public static <T extends SpecificRecord> Function<T, byte[]> writer(
      SendcapConfig config, Class<T> type, String topic) {
    Serde<T> serde;
    try {
      serde = AvroSerdes.of(type, config.avroSerde(), configs(config));
    } catch (ConfigException e) {
      throw new IllegalArgumentException(e.getMessage(), e);
    }
    if (serde instanceof ConfluentAvroSerde<T> confluent) {
      try {
        confluent.schemaId(topic);
      } catch (SerializationException | SchemaRegistryUnavailableException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    }
    return record -> serde.serializer().serialize(topic, record);
  }

  /**
   * Decodes records of a generated class in either framing, the Confluent wire format and Avro
   * single-object encoding (or, with {@code avro.serde} naming a serde class, as that class reads
   * them). Without {@code schema.registry.url}, a record in the Confluent wire format fails with a
   * {@link SerializationException} that says to set it.
   *
   * @throws IllegalArgumentException if the registry settings are invalid, or, when decoding, if
   *     the registry cannot be reached
   */
  public static <T extends SpecificRecord> Deserializer<T> reader(
      SendcapConfig config, Class<T> type) {
    String setting = config.avroSerde();
    Deserializer<T> decode;
    if (!setting.equals(AvroSerdes.SINGLE_OBJECT) && !setting.equals(AvroSerdes.CONFLUENT)) {
      decode = AvroSerdes.of(type, setting, configs(config)).deserializer();
    } else if (config.schemaRegistry().containsKey(SchemaRegistrySettings.URL)) {
      ConfluentAvroSerde<T> confluent = new ConfluentAvroSerde<>(type);
      try {
        confluent.configure(configs(config), false);
      } catch (ConfigException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
      config.writerSchemas().forEach(confluent::addWriterSchema);
      decode = confluent::decode;
    } else {
      // Unconfigured, it reads single-object records; only the Confluent framing needs a registry.
      ConfluentAvroSerde<T> either = new ConfluentAvroSerde<>(type);
      config.writerSchemas().forEach(either::addWriterSchema);
      decode =
          (topic, bytes) -> {
            if (ConfluentAvroSerde.isFramed(bytes)) {
              throw new SerializationException(
                  "a "
                      + type.getSimpleName()
                      + " in the Confluent wire format (schema id "
                      + ByteBuffer.wrap(bytes, 1, 4).getInt()
                      + "): set "
                      + SchemaRegistrySettings.URL
                      + " (--set "
                      + SchemaRegistrySettings.URL
                      + "=...) to read it through the schema registry");
            }
            return either.decode(topic, bytes);
          };
    }
    Deserializer<T> inner = decode;
    return (topic, bytes) -> {
      try {
        return inner.deserialize(topic, bytes);
      } catch (SchemaRegistryUnavailableException e) {
        throw new IllegalArgumentException(e.getMessage(), e);
      }
    };
  }

  /** What the Avro serde is configured with: the Kafka properties and the registry settings. */
  private static Map<String, Object> configs(SendcapConfig config) {
    Map<String, Object> props = new HashMap<>();
    config.streams().forEach((k, v) -> props.put(String.valueOf(k), v));
    props.putAll(config.schemaRegistry());
    props.putAll(config.avroLimits().configs());
    return props;
  }
}
