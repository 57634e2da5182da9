package io.sendcap.serde;

import java.io.IOException;
import java.time.Instant;
import java.util.List;
import org.apache.avro.Conversion;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.io.Encoder;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecordBase;

/**
 * A {@link SpecificDatumWriter} that can write one nested record from bytes encoded before. Avro's
 * binary form of a record is its fields' forms in order, with no length or tag, so a record read
 * with the same schema can be copied into the record that embeds it instead of being encoded again:
 * sendcap's outputs embed the input's {@code ScheduledSend} this way.
 *
 * <p>The fields of the record that embeds are written by writers chosen once from its schema
 * (strings, booleans, ints, longs, timestamps, enums and their unions with null), where Avro's
 * writer looks at each value's schema again, resolves each union branch by the value's type and
 * looks up each field's conversion; other fields are written by Avro's writer.
 *
 * <p>Thread-safe, like the writer it extends: what to embed is held per thread for one {@link
 * #write(Object, Encoder, Object, byte[])}.
 */
final class EmbeddingDatumWriter<T> extends SpecificDatumWriter<T> {
  /** What one thread's current write embeds; empty (a null top) between writes. */
  private static final class Embedding {
    private Object top;
    private Object nested;
    private byte[] body;
  }

  // One holder per thread, kept and cleared rather than set and removed: removing a thread-local
  // takes ThreadLocal's stale-entry paths, which differ on a new thread and had the compiled
  // writer thrown away and compiled again for each new stream thread (BENCHMARKS.md).
  private final ThreadLocal<Embedding> embedding = ThreadLocal.withInitial(Embedding::new);

  /** Writes one field's value, as Avro's writer would under the field's schema. */
  @FunctionalInterface
  private interface FieldWriter {
    void write(Object value, Encoder out) throws IOException;
  }

  /** The writers of the root record's fields, in order; null for a field Avro's writer writes. */
  private final FieldWriter[] fieldWriters;

  EmbeddingDatumWriter(Schema schema, SpecificData model) {
    super(schema, model);
    this.fieldWriters =
        schema.getType() == Schema.Type.RECORD
            ? schema.getFields().stream().map(f -> writerOf(f.schema())).toArray(FieldWriter[]::new)
            : new FieldWriter[0];
  }

  /** A writer of values of {@code schema}; null for a schema left to Avro's writer. */
  private static FieldWriter writerOf(Schema schema) {
    LogicalType logical = schema.getLogicalType();
    switch (schema.getType()) {
      case BOOLEAN:
        return (v, out) -> out.writeBoolean((Boolean) v);
      case INT:
        return logical == null ? (v, out) -> out.writeInt((Integer) v) : null;
      case LONG:
        if (logical == null) {
          return (v, out) -> out.writeLong((Long) v);
        }
        if (logical instanceof LogicalTypes.TimestampMillis) {
          return (v, out) -> out.writeLong(v instanceof Instant t ? t.toEpochMilli() : (Long) v);
        }
        return null;
      case STRING:
        return logical == null ? (v, out) -> out.writeString((CharSequence) v) : null;
      case ENUM:
        return (v, out) ->
            out.writeEnum(
                v instanceof Enum<?> e ? e.ordinal() : schema.getEnumOrdinal(v.toString()));
      case UNION:
        List<Schema> types = schema.getTypes();
        int nullAt = types.size() != 2 ? -1 : types.get(0).getType() == Schema.Type.NULL ? 0 : 1;
        if (nullAt < 0 || types.get(nullAt).getType() != Schema.Type.NULL) {
          return null;
        }
        int valueAt = 1 - nullAt;
        FieldWriter branch = writerOf(types.get(valueAt));
        if (branch == null) {
          return null;
        }
        return (v, out) -> {
          if (v == null) {
            out.writeIndex(nullAt);
          } else {
            out.writeIndex(valueAt);
            branch.write(v, out);
          }
        };
      default:
        return null;
    }
  }

  /**
   * Writes {@code datum}, a record, with its field whose value is {@code nested} (a record, not in
   * a union) written as {@code body}, that record's binary form under the field's schema; with a
   * null {@code body}, as {@link #write(Object, Encoder)}.
   */
  void write(T datum, Encoder out, Object nested, byte[] body) throws IOException {
    if (body == null) {
      write(datum, out);
      return;
    }
    Embedding e = embedding.get();
    e.top = datum;
    e.nested = nested;
    e.body = body;
    try {
      write(datum, out);
    } finally {
      e.top = null;
      e.nested = null;
      e.body = null;
    }
  }

  @Override
  protected void writeRecord(Schema schema, Object datum, Encoder out) throws IOException {
    Embedding e = embedding.get();
    if (datum != e.top) {
      super.writeRecord(schema, datum, out);
      return;
    }
    // Field by field rather than the generated class's own encoder, which would encode the nested
    // record itself; as SpecificDatumWriter.writeField does, but reading each field here: Avro's
    // own call of IndexedRecord.get serves every record read or written in the JVM, and compiled
    // for those it sees most (the inputs, in a JVM that also produces them), it costs the outputs
    // a slow call per field.
    SpecificRecordBase record = (SpecificRecordBase) datum;
    // the record that embeds is the one write() was given, written under the root schema
    List<Schema.Field> fields = schema.getFields();
    FieldWriter[] writers = fieldWriters;
    for (int i = 0; i < writers.length; i++) {
      Schema.Field f = fields.get(i);
      Object value = record.get(f.pos());
      if (value == e.nested) {
        out.writeFixed(e.body);
        continue;
      }
      if (writers[i] != null) {
        try {
          writers[i].write(value, out);
        } catch (NullPointerException missing) {
          throw new NullPointerException(
              "null value for field " + f.name() + " of " + schema.getFullName());
        }
        continue;
      }
      Conversion<?> conversion = record.getConversion(f.pos());
      LogicalType logicalType = f.schema().getLogicalType();
      if (conversion != null && logicalType != null) {
        value = convert(f.schema(), logicalType, conversion, value);
      }
      writeWithoutConversion(f.schema(), value, out);
    }
  }
}
