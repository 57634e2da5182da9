package io.sendcap.serde;

import java.io.IOException;
import org.apache.avro.Conversion;
import org.apache.avro.LogicalType;
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

  EmbeddingDatumWriter(Schema schema, SpecificData model) {
    super(schema, model);
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
    for (Schema.Field f : schema.getFields()) {
      Object value = record.get(f.pos());
      if (value == e.nested) {
        out.writeFixed(e.body);
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
