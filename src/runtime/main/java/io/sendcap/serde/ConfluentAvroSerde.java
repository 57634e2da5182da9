package io.sendcap.serde;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.AvroRuntimeException;
import org.apache.avro.AvroTypeException;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.SchemaCompatibility.Incompatibility;
import org.apache.avro.SchemaCompatibility.SchemaIncompatibilityType;
import org.apache.avro.SchemaNormalization;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A Kafka serde for Avro records in the Confluent wire format: byte 0x00, the 4-byte big-endian id
 * of the writer's schema in a schema registry, then the Avro binary record. What Confluent's
 * serializers in Java, JavaScript, Python and Go write and read.
 *
 * <p>The serializer writes with the schema generated from {@code schemas/}, self-contained (nested
 * records inlined, as Avro's {@link Schema#toString()} writes it), under the subject {@code
 * <topic>-value} ({@code <topic>-key} for keys: Confluent's TopicNameStrategy). With {@code
 * auto.register.schemas=true} it registers the schema there; with {@code false} the subject must
 * hold it already.
 *
 * <p>The deserializer reads both framings, so that a topic can move from one to the other without a
 * stop: 0x00 is the Confluent wire format, whose writer schema is fetched by its id and resolved
 * against sendcap's (a writer that added an optional field is read; one sendcap's schema cannot
 * read fails naming the field), and 0xC3 0x01 is Avro single-object encoding, read by {@link
 * SingleObjectAvroSerde}. A record that cannot be read, in either framing or with a schema id the
 * registry does not know, fails with a {@link SerializationException} naming the schema id, the
 * subject and the reason; a registry that cannot be reached fails with a {@link
 * SchemaRegistryUnavailableException} instead, because the same record can be read once it is back.
 * Writer schemas and records are read within {@link AvroLimits} ({@code avro.max-schema-bytes},
 * {@code avro.max-depth}): a send beyond them is a record that cannot be read, whatever it holds.
 *
 * <p>Schema ids and resolved writer schemas are cached; after the first record of a schema, neither
 * direction asks the registry again. Thread-safe once configured.
 *
 * @param <T> the generated record class
 */
public final class ConfluentAvroSerde<T extends SpecificRecord> implements Serde<T> {
  /** The first byte of a record in the Confluent wire format. */
  public static final byte MAGIC_BYTE = 0x0;

  /** The magic byte and the schema id before the Avro body. */
  public static final int HEADER_BYTES = 5;

  private static final int READER_CACHE_CAPACITY = SchemaRegistryClient.DEFAULT_CACHE_CAPACITY;
  // Each thread's encoder and decoder, reused from record to record; never null, as
  // SingleObjectAvroSerde's.
  private static final ThreadLocal<BinaryEncoder> ENCODER =
      ThreadLocal.withInitial(
          () -> EncoderFactory.get().binaryEncoder(OutputStream.nullOutputStream(), null));
  private static final ThreadLocal<BinaryDecoder> DECODER =
      ThreadLocal.withInitial(() -> DecoderFactory.get().binaryDecoder(new byte[0], null));

  private final String name;
  private final Schema schema;
  private final SpecificData model;
  private final EmbeddingDatumWriter<T> writer;
  private final long fingerprint;
  private final SingleObjectAvroSerde<T> singleObject;
  private final Map<String, Integer> idsByTopic = new ConcurrentHashMap<>();
  private final LruCache<Integer, Reader<T>> readers = new LruCache<>(READER_CACHE_CAPACITY);

  /**
   * The reader of the records of one schema id, and whether that schema is sendcap's own (the same
   * parsing canonical form: the same binary layout).
   */
  private record Reader<T>(
      SpecificDatumReader<T> reader, boolean own, Schema checked, String refusal) {}

  private volatile SchemaRegistryClient registry;
  private volatile AvroLimits limits = AvroLimits.DEFAULT;
  private volatile boolean autoRegister;
  private volatile String subjectSuffix = "-value";

  /**
   * Creates a serde of records of a generated class, to be configured with {@link #configure(Map,
   * boolean)} (the {@code schema.registry.*} settings and {@code auto.register.schemas}) before
   * use.
   */
  public ConfluentAvroSerde(Class<T> type) {
    this.singleObject = new SingleObjectAvroSerde<>(type);
    this.model = SpecificData.getForClass(type);
    this.schema = model.getSchema(type);
    this.name = schema.getFullName();
    this.writer = new EmbeddingDatumWriter<>(schema, model);
    this.fingerprint = SchemaNormalization.parsingFingerprint64(schema);
  }

  /**
   * Creates a serde of records of a generated class that uses a given registry client (and its
   * caches); needs no configuration.
   *
   * @param type the generated class
   * @param registry the schema registry
   * @param autoRegister whether the serializer registers its schema, or requires it registered
   * @param isKey whether the serde is for record keys (subject {@code <topic>-key}) or values
   */
  public ConfluentAvroSerde(
      Class<T> type, SchemaRegistryClient registry, boolean autoRegister, boolean isKey) {
    this(type);
    this.registry = registry;
    this.autoRegister = autoRegister;
    this.subjectSuffix = isKey ? "-key" : "-value";
  }

  /**
   * Reads the {@code schema.registry.*} settings and {@code auto.register.schemas} (see {@link
   * SchemaRegistrySettings}) and the bounds of {@link AvroLimits}, and creates the registry client.
   *
   * @throws org.apache.kafka.common.config.ConfigException naming each invalid setting
   */
  @Override
  public void configure(Map<String, ?> configs, boolean isKey) {
    SchemaRegistrySettings settings = SchemaRegistrySettings.from(configs);
    this.limits = AvroLimits.from(configs);
    singleObject.limits(limits);
    this.registry = new SchemaRegistryClient(settings);
    this.autoRegister = settings.autoRegister();
    this.subjectSuffix = isKey ? "-key" : "-value";
  }

  /**
   * Lets the deserializer read records in single-object encoding written with another version of
   * the schema (see {@link SingleObjectAvroSerde#addWriterSchema(Schema)}); records in the
   * Confluent wire format name their writer schema themselves.
   */
  public void addWriterSchema(Schema writerSchema) {
    singleObject.addWriterSchema(writerSchema);
  }

  /**
   * The subject of this serde's records on a topic: {@code <topic>-value} or {@code <topic>-key}.
   */
  public String subject(String topic) {
    return topic + subjectSuffix;
  }

  /** The schema the serializer writes with, the one generated from {@code schemas/}. */
  public Schema schema() {
    return schema;
  }

  /**
   * The id the serializer writes records to a topic with: the schema registered (or, with {@code
   * auto.register.schemas=false}, found) under the topic's subject. Asked of the registry once per
   * topic.
   *
   * @throws SerializationException if the registry refuses the schema, or it is not registered
   *     under the subject and {@code auto.register.schemas=false}
   * @throws SchemaRegistryUnavailableException if the registry cannot be reached
   */
  public int schemaId(String topic) {
    Integer cached = idsByTopic.get(topic);
    if (cached != null) {
      return cached;
    }
    SchemaRegistryClient client = registry();
    String subject = subject(topic);
    int id;
    try {
      if (autoRegister) {
        id = client.register(subject, schema);
      } else {
        OptionalInt found = client.lookup(subject, schema);
        if (found.isEmpty()) {
          throw new SerializationException(
              "the schema of "
                  + name
                  + " is not registered under subject "
                  + subject
                  + " in the schema registry at "
                  + client.urls()
                  + ", and auto.register.schemas=false: register it there (self-contained, as"
                  + " sendcap writes it), or set auto.register.schemas=true");
        }
        id = found.getAsInt();
      }
    } catch (SchemaRegistryException e) {
      throw new SerializationException(
          "cannot "
              + (autoRegister ? "register" : "look up")
              + " the schema of "
              + name
              + " under subject "
              + subject
              + ": "
              + e.getMessage(),
          e);
    }
    idsByTopic.put(topic, id);
    return id;
  }

  /**
   * Encodes a record for a topic in the Confluent wire format; a null record stays null.
   *
   * @throws SerializationException if the record cannot be encoded or its schema not registered
   * @throws SchemaRegistryUnavailableException if the registry cannot be reached
   */
  public byte[] encode(String topic, T record) {
    return encode(topic, record, null, null);
  }

  /**
   * Encodes a record for a topic in the Confluent wire format, its field holding {@code nested}
   * written as {@code nestedBody}, that record's binary body as {@link Decoded#body()} gives it,
   * instead of being encoded again; a null record stays null, a null {@code nestedBody} encodes the
   * whole record.
   *
   * @throws SerializationException if the record cannot be encoded or its schema not registered
   * @throws SchemaRegistryUnavailableException if the registry cannot be reached
   */
  public byte[] encode(String topic, T record, Object nested, byte[] nestedBody) {
    if (record == null) {
      return null;
    }
    int id = schemaId(topic);
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    out.write(MAGIC_BYTE);
    out.writeBytes(ByteBuffer.allocate(4).putInt(id).array());
    try {
      BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, ENCODER.get());
      ENCODER.set(encoder);
      writer.write(record, encoder, nested, nestedBody);
      encoder.flush();
    } catch (IOException | AvroRuntimeException | NullPointerException | ClassCastException e) {
      throw new SerializationException("cannot encode " + name + ": " + e.getMessage(), e);
    }
    return out.toByteArray();
  }

  /**
   * Whether {@code bytes} are in the Confluent wire format: the magic byte and a schema id at least
   * (what {@link #decode} reads as such; it does not look the id up).
   */
  public static boolean isFramed(byte[] bytes) {
    return bytes != null && bytes.length >= HEADER_BYTES && bytes[0] == MAGIC_BYTE;
  }

  /**
   * Decodes a record read from a topic, in the Confluent wire format or Avro single-object
   * encoding; null bytes stay null.
   *
   * @throws SerializationException if the bytes are neither, the schema id is unknown to the
   *     registry, or sendcap's schema cannot read the record; the message says which and why
   * @throws SchemaRegistryUnavailableException if the registry cannot be reached
   */
  public T decode(String topic, byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    if (bytes.length > 0 && bytes[0] == MAGIC_BYTE) {
      return decodeConfluent(topic, bytes).record();
    }
    if (bytes.length > 1 && bytes[0] == (byte) 0xC3 && bytes[1] == (byte) 0x01) {
      return singleObject.decode(bytes);
    }
    throw new UnreadableRecordException(
        "not a "
            + name
            + " in the Confluent wire format (0x00, then a 4-byte schema id) or Avro single-object"
            + " encoding (0xC3 0x01): "
            + (bytes.length == 0 ? "the value is empty" : "it starts with " + firstBytes(bytes)));
  }

  /**
   * Decodes a record as {@link #decode} does and, if it was written with sendcap's own schema (in
   * either framing), keeps its binary body; null bytes stay null.
   */
  public Decoded<T> decodeKeepingBody(String topic, byte[] bytes) {
    if (bytes != null && bytes.length > 0 && bytes[0] == MAGIC_BYTE) {
      return decodeConfluent(topic, bytes);
    }
    if (bytes != null && bytes.length > 1 && bytes[0] == (byte) 0xC3 && bytes[1] == (byte) 0x01) {
      return singleObject.decodeKeepingBody(bytes);
    }
    return bytes == null ? null : new Decoded<>(decode(topic, bytes), null, bytes.length);
  }

  private Decoded<T> decodeConfluent(String topic, byte[] bytes) {
    if (bytes.length < HEADER_BYTES) {
      throw new UnreadableRecordException(
          "not a "
              + name
              + " in the Confluent wire format: "
              + bytes.length
              + " byte(s), fewer than its 5-byte header (0x00, then a 4-byte schema id)");
    }
    int id = ByteBuffer.wrap(bytes, 1, 4).getInt();
    Reader<T> reader = reader(topic, id);
    if (reader.refusal() != null) {
      throw new UnreadableRecordException(
          "a "
              + name
              + " written with schema id "
              + id
              + " ("
              + context(topic)
              + "), which"
              + " sendcap does not read: "
              + reader.refusal());
    }
    try {
      if (reader.checked() != null) {
        limits.check(reader.checked(), bytes, HEADER_BYTES, bytes.length - HEADER_BYTES);
      }
      BinaryDecoder in =
          DecoderFactory.get()
              .binaryDecoder(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES, DECODER.get());
      DECODER.set(in);
      T record = reader.reader().read(null, in);
      return new Decoded<>(
          record,
          reader.own() && in.isEnd() ? Arrays.copyOfRange(bytes, HEADER_BYTES, bytes.length) : null,
          bytes.length);
    } catch (AvroTypeException e) {
      throw new UnreadableRecordException(
          "a "
              + name
              + " written with schema id "
              + id
              + " ("
              + context(topic)
              + ") that sendcap's schema cannot read: "
              + explain(reader.reader().getSchema(), bytes, e));
    } catch (IOException | RuntimeException e) {
      // Avro's decoder throws more than its declared errors on some bytes (an
      // UnsupportedOperationException for a string longer than a Java array): all are the data's.
      throw new UnreadableRecordException(
          "not a "
              + name
              + " in the Confluent wire format with schema id "
              + id
              + " ("
              + context(topic)
              + "): "
              + e);
    }
  }

  /** The reader from the writer schema of an id to sendcap's, cached. */
  private Reader<T> reader(String topic, int id) {
    Reader<T> cached = readers.get(id);
    if (cached != null) {
      return cached;
    }
    SchemaRegistryClient client = registry();
    Schema writerSchema;
    try {
      writerSchema = client.schemaById(id);
    } catch (SchemaRegistryException e) {
      // the registry's answer is about this record's id: bad data, as bytes that are not Avro
      throw new UnreadableRecordException(
          "not a "
              + name
              + " sendcap can read: schema id "
              + id
              + " ("
              + context(topic)
              + "): "
              + e.getMessage());
    }
    boolean own = SchemaNormalization.parsingFingerprint64(writerSchema) == fingerprint;
    String refusal = own ? null : limits.refusal(writerSchema).orElse(null);
    Reader<T> reader =
        new Reader<>(
            refusal == null ? new SpecificDatumReader<>(writerSchema, schema, model) : null,
            own,
            own || !AvroLimits.needsCheck(writerSchema) ? null : writerSchema,
            refusal);
    readers.put(id, reader);
    return reader;
  }

  private String context(String topic) {
    return topic == null ? "no topic" : "topic " + topic + ", subject " + subject(topic);
  }

  private SchemaRegistryClient registry() {
    SchemaRegistryClient client = registry;
    if (client == null) {
      throw new IllegalStateException(
          "ConfluentAvroSerde of " + name + " used before configure(): set schema.registry.url");
    }
    return client;
  }

  private static String firstBytes(byte[] bytes) {
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < Math.min(4, bytes.length); i++) {
      hex.append(i == 0 ? "" : " ")
          .append("0x")
          .append(HexFormat.of().withUpperCase().toHexDigits(bytes[i]));
    }
    return hex.toString();
  }

  /**
   * Names what in a record written with another schema does not fit sendcap's: its values (a field
   * missing, an enum symbol sendcap does not have), then the fields whose types cannot be resolved.
   */
  private String explain(Schema writerSchema, byte[] bytes, AvroTypeException e) {
    Map<String, String> reasons = new LinkedHashMap<>();
    try {
      GenericRecord record =
          new GenericDatumReader<GenericRecord>(writerSchema)
              .read(
                  null,
                  DecoderFactory.get()
                      .binaryDecoder(bytes, HEADER_BYTES, bytes.length - HEADER_BYTES, null));
      for (Schema.Field field : schema.getFields()) {
        Object value =
            writerSchema.getField(field.name()) == null ? null : record.get(field.name());
        Schema type = field.schema();
        if (value == null && !type.isNullable() && !field.hasDefaultValue()) {
          reasons.put(field.name(), field.name() + " is missing");
        }
        if (value instanceof GenericData.EnumSymbol symbol
            && type.getType() == Schema.Type.ENUM
            && !type.hasEnumSymbol(symbol.toString())) {
          reasons.put(
              field.name(),
              field.name() + " " + symbol + " is not one of " + type.getEnumSymbols());
        }
      }
    } catch (IOException | RuntimeException unreadable) {
      // not even readable with its own schema: explained by the schemas below
    }
    for (Incompatibility i :
        SchemaCompatibility.checkReaderWriterCompatibility(schema, writerSchema)
            .getResult()
            .getIncompatibilities()) {
      // An enum symbol sendcap lacks fails only the records that hold it: named above if so.
      if (i.getType() != SchemaIncompatibilityType.MISSING_ENUM_SYMBOLS) {
        reasons.putIfAbsent(fieldPath(i.getLocation()), describe(i));
      }
    }
    return reasons.isEmpty() ? e.getMessage() : String.join("; ", reasons.values());
  }

  /** One incompatibility between sendcap's schema and a writer's, naming the field. */
  private String describe(Incompatibility i) {
    String field = fieldPath(i.getLocation());
    String subject = field.isEmpty() ? "the record" : field;
    return switch (i.getType()) {
      case READER_FIELD_MISSING_DEFAULT_VALUE ->
          (field.isEmpty() ? i.getMessage() : field)
              + " is missing from the writer's schema and has no default in sendcap's";
      case TYPE_MISMATCH ->
          subject
              + " is "
              + typeName(i.getWriterFragment())
              + " in the writer's schema, "
              + typeName(i.getReaderFragment())
              + " in sendcap's";
      case NAME_MISMATCH ->
          subject
              + " is named "
              + fullName(i.getWriterFragment())
              + " in the writer's schema, "
              + fullName(i.getReaderFragment())
              + " in sendcap's";
      default -> subject + ": " + i.getMessage();
    };
  }

  private static String typeName(Schema fragment) {
    return fragment == null ? "?" : fragment.getType().getName();
  }

  private static String fullName(Schema fragment) {
    return fragment == null ? "?" : fragment.getFullName();
  }

  /**
   * The dotted field names along an incompatibility's location in sendcap's schema, such as {@code
   * /fields/0/type/fields/2/type} for {@code send.userId}; empty for the record itself.
   */
  private String fieldPath(String location) {
    List<String> names = new ArrayList<>();
    Schema current = schema;
    String[] steps = location == null ? new String[0] : location.split("/");
    for (int s = 0; s < steps.length; s++) {
      if (!steps[s].equals("fields") || s + 1 >= steps.length || current == null) {
        continue;
      }
      Schema record = recordOf(current);
      int index;
      try {
        index = Integer.parseInt(steps[++s]);
      } catch (NumberFormatException e) {
        break;
      }
      if (record == null || index >= record.getFields().size()) {
        break;
      }
      Schema.Field field = record.getFields().get(index);
      names.add(field.name());
      current = field.schema();
    }
    return String.join(".", names);
  }

  /** The record of a record schema or of a union with a record branch; null for any other. */
  private static Schema recordOf(Schema schema) {
    if (schema.getType() == Schema.Type.RECORD) {
      return schema;
    }
    if (schema.getType() == Schema.Type.UNION) {
      for (Schema branch : schema.getTypes()) {
        if (branch.getType() == Schema.Type.RECORD) {
          return branch;
        }
      }
    }
    return null;
  }

  @Override
  public Serializer<T> serializer() {
    return this::encode;
  }

  @Override
  public Deserializer<T> deserializer() {
    return this::decode;
  }
}
