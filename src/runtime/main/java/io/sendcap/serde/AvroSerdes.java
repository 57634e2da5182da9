package io.sendcap.serde;

import java.util.Map;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.serialization.Serde;

/**
 * Chooses the serde of sendcap's Avro records from the {@code avro.serde} setting.
 *
 * <p>{@value #SINGLE_OBJECT} (the default) is Avro single-object encoding and needs no schema
 * registry. {@value #CONFLUENT} is the Confluent wire format with a schema registry ({@link
 * ConfluentAvroSerde}, configured with the {@code schema.registry.*} settings and {@code
 * auto.register.schemas}); it reads single-object records too. Any other value is the class name of
 * a Kafka {@link Serde} with a public no-argument constructor; it is configured with the Kafka
 * Streams properties and the schema registry settings.
 */
public final class AvroSerdes {
  /** {@code avro.serde} for Avro single-object encoding, without a registry: the default. */
  public static final String SINGLE_OBJECT = "single-object";

  /** {@code avro.serde} for the Confluent wire format with a schema registry. */
  public static final String CONFLUENT = "confluent";

  private AvroSerdes() {}

  /**
   * Returns the value serde for records of a generated class under the given setting.
   *
   * @param type the generated class
   * @param setting the value of {@code avro.serde}
   * @param configs what a configurable serde is configured with: the Kafka Streams properties and
   *     the schema registry settings
   */
  public static <T extends SpecificRecord> Serde<T> of(
      Class<T> type, String setting, Map<String, ?> configs) {
    if (SINGLE_OBJECT.equals(setting)) {
      return new SingleObjectAvroSerde<>(type, AvroLimits.from(configs));
    }
    Serde<T> serde =
        CONFLUENT.equals(setting) ? new ConfluentAvroSerde<>(type) : instantiate(setting);
    serde.configure(configs, false);
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
              + "\" is invalid: use "
              + SINGLE_OBJECT
              + ", "
              + CONFLUENT
              + " or a Serde class on the classpath",
          e);
    } catch (ReflectiveOperationException e) {
      throw new IllegalArgumentException(
          "avro.serde=\"" + className + "\" has no public no-argument constructor", e);
    }
  }
}
