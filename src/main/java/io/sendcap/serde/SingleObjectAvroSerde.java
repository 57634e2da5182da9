package io.sendcap.serde;

import java.io.IOException;
import java.nio.ByteBuffer;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.Schema;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.message.BinaryMessageEncoder;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;
import org.apache.avro.util.ClassSecurityValidator;
import org.apache.avro.util.ClassSecurityValidator.ClassSecurityPredicate;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A Kafka serde for Avro records in Avro's single-object encoding: a two-byte marker, the 8-byte
 * CRC-64-AVRO fingerprint of the writer's schema, then the binary record.
 *
 * <p>A record is read against the writer schema its fingerprint names, resolved to the reader
 * schema generated from {@code schemas/}; bytes without the marker or with an unknown fingerprint
 * fail with a {@link SerializationException} naming the problem. Thread-safe.
 *
 * @param <T> the generated record class
 */
public final class SingleObjectAvroSerde<T extends SpecificRecord> implements Serde<T> {
  private final String name;
  private final BinaryMessageEncoder<T> encoder;
  private final BinaryMessageDecoder<T> decoder;

  /** Creates a serde of records of a class generated from {@code schemas/}. */
  public SingleObjectAvroSerde(Class<T> type) {
    trust(type);
    SpecificData model = SpecificData.getForClass(type);
    Schema schema = model.getSchema(type);
    this.name = schema.getFullName();
    this.encoder = new BinaryMessageEncoder<>(model, schema);
    this.decoder = new BinaryMessageDecoder<>(model, schema);
  }

  /**
   * Adds the package of a generated class (its record, enum and nested record classes) to the
   * classes Avro may instantiate when reading; Avro 1.12 refuses classes it was not told to trust.
   */
  private static synchronized void trust(Class<?> type) {
    ClassSecurityPredicate current = ClassSecurityValidator.getGlobal();
    if (!current.isTrusted(type)) {
      String prefix = type.getPackageName() + ".";
      ClassSecurityPredicate generated = c -> c.getName().startsWith(prefix);
      ClassSecurityValidator.setGlobal(ClassSecurityValidator.composite(current, generated));
    }
  }

  /**
   * Lets the deserializer read records written with an older or newer version of the schema.
   *
   * @param writerSchema a schema that producers may have written with
   */
  public void addWriterSchema(Schema writerSchema) {
    decoder.addSchema(writerSchema);
  }

  /** Encodes a record; a null record stays null. */
  public byte[] encode(T record) {
    if (record == null) {
      return null;
    }
    try {
      ByteBuffer buffer = encoder.encode(record);
      byte[] bytes = new byte[buffer.remaining()];
      buffer.get(bytes);
      return bytes;
    } catch (IOException | AvroRuntimeException e) {
      throw new SerializationException("cannot encode " + name + ": " + e.getMessage(), e);
    }
  }

  /** Decodes a record; null bytes stay null. */
  public T decode(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    try {
      return decoder.decode(bytes);
    } catch (IOException | AvroRuntimeException e) {
      throw new SerializationException(
          "not a " + name + " in Avro single-object encoding: " + e.getMessage(), e);
    }
  }

  @Override
  public Serializer<T> serializer() {
    return (topic, record) -> encode(record);
  }

  @Override
  public Deserializer<T> deserializer() {
    return (topic, bytes) -> decode(bytes);
  }
}
