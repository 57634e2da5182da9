package io.sendcap.serde;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.AvroTypeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.message.BinaryMessageDecoder;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificRecord;
import org.apache.avro.util.ClassSecurityValidator;
import org.apache.avro.util.ClassSecurityValidator.ClassSecurityPredicate;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
  private static final Logger LOG = LoggerFactory.getLogger(SingleObjectAvroSerde.class);

  /** The marker and the fingerprint before the binary record. */
  private static final int HEADER_BYTES = 10;

  /** The single-object encoding's marker, version 1. */
  private static final byte[] MARKER = {(byte) 0xC3, 0x01};

  /** Each thread's output buffer and encoder, reused from record to record. */
  private static final ThreadLocal<Output> OUTPUT = ThreadLocal.withInitial(Output::new);

  /**
   * Each thread's decoder of records in this serde's own schema, reused from record to record.
   * Never null, not even on a thread's first record: code compiled while no thread saw a null here
   * would be thrown away and compiled again for every new stream thread (BENCHMARKS.md).
   */
  private static final ThreadLocal<BinaryDecoder> INPUT =
      ThreadLocal.withInitial(() -> DecoderFactory.get().binaryDecoder(new byte[0], null));

  private final String name;
  private final Schema schema;
  private final EmbeddingDatumWriter<T> writer;
  private final SpecificDatumReader<T> ownReader;
  private final byte[] header;
  private final BinaryMessageDecoder<T> decoder;
  private final Map<Long, Schema> writerSchemas = new ConcurrentHashMap<>();

  /**
   * Every writer schema read, sendcap's own included, by fingerprint: each record is walked ({@link
   * AvroLimits#check}) before Avro's {@link BinaryMessageDecoder} reads it, because that reads from
   * a stream, which cannot tell a claimed length from the bytes left and would allocate a string of
   * 2 GB that five bytes claim.
   */
  private final Map<Long, Schema> checked = new ConcurrentHashMap<>();

  private final Map<Long, String> refused = new ConcurrentHashMap<>();
  private volatile AvroLimits limits;

  /**
   * Creates a serde of records of a class generated from {@code schemas/}; it also reads records
   * written with the earlier versions of the schema kept in {@code schemas/history}.
   */
  public SingleObjectAvroSerde(Class<T> type) {
    this(type, AvroLimits.DEFAULT);
  }

  /**
   * Creates a serde of records of a class generated from {@code schemas/} that reads writer schemas
   * and records within {@code limits}; it also reads records written with the earlier versions of
   * the schema kept in {@code schemas/history}.
   */
  public SingleObjectAvroSerde(Class<T> type, AvroLimits limits) {
    this.limits = limits;
    trust(type);
    SpecificData model = SpecificData.getForClass(type);
    Schema schema = model.getSchema(type);
    trustNested(schema, new HashSet<>());
    this.name = schema.getFullName();
    this.schema = schema;
    this.writer = new EmbeddingDatumWriter<>(schema, model);
    this.ownReader = new SpecificDatumReader<>(schema, schema, model);
    this.header =
        ByteBuffer.allocate(HEADER_BYTES)
            .order(ByteOrder.LITTLE_ENDIAN)
            .put(MARKER)
            .putLong(SchemaNormalization.parsingFingerprint64(schema))
            .array();
    this.decoder = new BinaryMessageDecoder<>(model, schema);
    checked.put(SchemaNormalization.parsingFingerprint64(schema), schema);
    for (int version = 1; ; version++) {
      String resource = "/schemas/history/" + schema.getName() + "-v" + version + ".avsc";
      try (InputStream in = SingleObjectAvroSerde.class.getResourceAsStream(resource)) {
        if (in == null) {
          break;
        }
        addWriterSchema(new Schema.Parser().parse(in));
      } catch (IOException e) {
        throw new UncheckedIOException("cannot read " + resource, e);
      }
    }
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
   * Lets Avro instantiate the generated classes of {@code schema} and of the records and enums it
   * holds, for code that builds records without a serde (the tools' JSON reader).
   */
  public static void trustClassesOf(Schema schema) {
    trustNested(schema, new HashSet<>());
  }

  /**
   * Trusts the classes of every record and enum {@code schema} holds, also those of other packages
   * (a {@code PendingSend} holds a {@code ScheduledSend}), so that this serde reads on its own,
   * whichever serde was created first.
   */
  private static void trustNested(Schema schema, Set<Schema> seen) {
    if (!seen.add(schema)) {
      return;
    }
    switch (schema.getType()) {
      case RECORD -> {
        trustClassOf(schema);
        schema.getFields().forEach(f -> trustNested(f.schema(), seen));
      }
      case ENUM -> trustClassOf(schema);
      case UNION -> schema.getTypes().forEach(t -> trustNested(t, seen));
      case ARRAY -> trustNested(schema.getElementType(), seen);
      case MAP -> trustNested(schema.getValueType(), seen);
      default -> {}
    }
  }

  private static void trustClassOf(Schema schema) {
    try {
      trust(
          Class.forName(schema.getFullName(), false, SingleObjectAvroSerde.class.getClassLoader()));
    } catch (ClassNotFoundException e) {
      // not generated here: Avro reads it as a generic record, which needs no trust
    }
  }

  /**
   * Lets the deserializer read records written with an older or newer version of the schema.
   *
   * @param writerSchema a schema that producers may have written with
   */
  public void addWriterSchema(Schema writerSchema) {
    long fingerprint = SchemaNormalization.parsingFingerprint64(writerSchema);
    Optional<String> refusal = limits.refusal(writerSchema);
    if (refusal.isPresent()) {
      LOG.warn(
          "records written with the version of {} of fingerprint {} go to the dead-letter topic: {}",
          name,
          Long.toHexString(fingerprint),
          refusal.get());
      refused.put(fingerprint, refusal.get());
      return;
    }
    decoder.addSchema(writerSchema);
    writerSchemas.put(fingerprint, writerSchema);
    checked.put(fingerprint, writerSchema);
  }

  /** Reads writer schemas added from now on, and records, within {@code limits}. */
  void limits(AvroLimits limits) {
    this.limits = limits;
  }

  /** Encodes a record; a null record stays null. */
  public byte[] encode(T record) {
    return encode(record, null, null);
  }

  /**
   * Encodes a record whose field holding {@code nested} is written as {@code nestedBody}, that
   * record's binary body as {@link Decoded#body()} gives it, instead of being encoded again; a null
   * record stays null, a null {@code nestedBody} encodes the whole record.
   */
  public byte[] encode(T record, Object nested, byte[] nestedBody) {
    if (record == null) {
      return null;
    }
    Output out = OUTPUT.get();
    try {
      out.reset();
      out.write(header);
      out.encoder = EncoderFactory.get().binaryEncoder(out, out.encoder);
      writer.write(record, out.encoder, nested, nestedBody);
      out.encoder.flush();
      return out.toByteArray();
    } catch (IOException | AvroRuntimeException e) {
      throw new SerializationException("cannot encode " + name + ": " + e.getMessage(), e);
    }
  }

  /**
   * Decodes a record and, if it was written with this serde's schema, keeps its binary body (the
   * bytes after the header, when the record takes them all); null bytes stay null.
   *
   * @throws SerializationException as {@link #decode}
   */
  public Decoded<T> decodeKeepingBody(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    if (bytes.length > HEADER_BYTES
        && Arrays.equals(bytes, 0, HEADER_BYTES, header, 0, HEADER_BYTES)) {
      BinaryDecoder in =
          DecoderFactory.get()
              .binaryDecoder(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES, INPUT.get());
      INPUT.set(in);
      try {
        T record = ownReader.read(null, in);
        return new Decoded<>(
            record,
            in.isEnd() ? Arrays.copyOfRange(bytes, HEADER_BYTES, bytes.length) : null,
            bytes.length);
      } catch (IOException | RuntimeException e) {
        // decode says why, in the same words as for any other record
      }
    }
    return new Decoded<>(decode(bytes), null, bytes.length);
  }

  /** Decodes a record; null bytes stay null. */
  public T decode(byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    boolean marked = bytes.length >= HEADER_BYTES && bytes[0] == MARKER[0] && bytes[1] == MARKER[1];
    long fingerprint =
        marked ? ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong() : 0;
    String refusal = marked ? refused.get(fingerprint) : null;
    if (refusal != null) {
      throw new UnreadableRecordException(
          "a " + name + " written with a version of its schema sendcap does not read: " + refusal);
    }
    try {
      Schema writer = marked ? checked.get(fingerprint) : null;
      if (writer != null) {
        limits.check(writer, bytes, HEADER_BYTES, bytes.length - HEADER_BYTES);
      }
      return decoder.decode(bytes);
    } catch (AvroTypeException e) {
      throw new UnreadableRecordException(
          "a " + name + " whose values sendcap's schema cannot hold: " + explain(bytes, e));
    } catch (IOException | RuntimeException e) {
      // Avro's decoder throws more than its declared errors on some bytes (an
      // UnsupportedOperationException for a string longer than a Java array): all are the data's.
      throw new UnreadableRecordException(
          "not a " + name + " in Avro single-object encoding: " + e.getMessage());
    }
  }

  /**
   * Names the field of a record written with another version of the schema that cannot be read into
   * this one: a null where this schema has no null, or an enum symbol it does not have.
   */
  private String explain(byte[] bytes, AvroTypeException e) {
    Schema writer =
        bytes.length < HEADER_BYTES
            ? null
            : writerSchemas.get(
                ByteBuffer.wrap(bytes, 2, 8).order(ByteOrder.LITTLE_ENDIAN).getLong());
    if (writer == null) {
      return e.getMessage();
    }
    GenericRecord record;
    try {
      record =
          new GenericDatumReader<GenericRecord>(writer)
              .read(
                  null,
                  DecoderFactory.get()
                      .binaryDecoder(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES, null));
    } catch (IOException | RuntimeException unreadable) {
      return e.getMessage();
    }
    for (Schema.Field field : schema.getFields()) {
      Object value = writer.getField(field.name()) == null ? null : record.get(field.name());
      Schema type = field.schema();
      if (value == null && !type.isNullable() && !field.hasDefaultValue()) {
        return field.name() + " is missing";
      }
      if (value instanceof GenericData.EnumSymbol symbol
          && type.getType() == Schema.Type.ENUM
          && !type.hasEnumSymbol(symbol.toString())) {
        return field.name() + " " + symbol + " is not one of " + type.getEnumSymbols();
      }
    }
    return e.getMessage();
  }

  @Override
  public Serializer<T> serializer() {
    return (topic, record) -> encode(record);
  }

  @Override
  public Deserializer<T> deserializer() {
    return (topic, bytes) -> decode(bytes);
  }

  /**
   * A growing byte array and a buffered encoder writing into it: Avro's {@code
   * BinaryMessageEncoder} writes byte by byte to a synchronized stream and copies its result twice.
   */
  private static final class Output extends ByteArrayOutputStream {
    BinaryEncoder encoder;

    Output() {
      super(1024);
    }
  }
}
