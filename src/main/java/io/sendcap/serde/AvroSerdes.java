package io.sendcap.serde;

import io.sendcap.config.SendcapConfig;
import java.util.Map;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.Serde;

/**
 * Chooses the serde of sendcap's Avro records from the {@code avro.serde} setting.
 *
 * <p>{@code single-object} (the default) needs no schema registry. Any other value is the class
 * name of a Kafka {@link Serde} with a public no-argument constructor, such as Confluent's {@code
 * io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde}; it is configured with the Kafka
 * Streams properties (so {@code schema.registry.url} reaches it).
 */
public final class AvroSerdes {
  private AvroSerdes() {}

  /**
   * Returns the value serde for records of a generated class under the given setting.
   *
   * @param type the generated class
   */
  public static <T extends SpecificRecord> Serde<T> of(
      Class<T> type, String setting, Map<String, ?> streamsProperties) {
    if (SendcapConfig.SINGLE_OBJECT.equals(setting)) {
      return new SingleObjectAvroSerde<>(type);
    }
    Serde<T> serde = instantiate(setting);
    serde.configure(streamsProperties, false);
    return serde;
  }

  @SuppressWarnings("unchecked")
  private static <T> Serde<T> instantiate(String className) {
    try {
      Object serde = Class.forName(className).getConstructor().newInstance();
      if (!(serde instanceof Serde<?>)) {
        throw new IllegalArgumentException(
            "avro.serde=\""
                + className
                + "\" is not a org.apache.kafka.common.serialization.Serde");
      }
      return (Serde<T>) serde;
    } catch (ClassNotFoundException e) {
      throw new IllegalArgumentException(
          "avro.serde=\""
              + className
              + "\" is invalid: use single-object or a Serde class on the classpath",
          e);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException(
          "avro.serde=\"" + className + "\" has no public no-argument constructor", e);
    }
  }
}
