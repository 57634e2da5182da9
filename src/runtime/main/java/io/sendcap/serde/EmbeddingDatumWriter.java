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
  private record Embedding(Object top, Object nested, byte[] body) {}

  private final ThreadLocal<Embedding> embedding = new ThreadLocal<>();

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
    embedding.set(new Embedding(datum, nested, body));
    try {
      write(datum, out);
    } finally {
      embedding.remove();
    }
  }

  @Override
  protected void writeRecord(Schema schema, Object datum, Encoder out) throws IOException {
    Embedding e = embedding.get();
    if (e == null || datum != e.top()) {
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
      if (value == e.nested()) {
        out.writeFixed(e.body());
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
