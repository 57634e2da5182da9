package io.sendcap.serde;

/**
 * A record as read from a topic, and its Avro binary body (the record's fields' binary forms, in
 * order, without framing) when it was written with the reader's own schema: the bytes a record that
 * embeds it can copy instead of encoding it again (see {@link EmbeddingDatumWriter}).
 *
 * @param record the record
 * @param body its binary body under the reader's schema, or null if it was written with another
 *     schema (another version of it, or one the registry resolves to it)
 * @param bytes the length of the value it was read from, framing included: what holding the record
 *     costs, known without encoding it again
 */
public record Decoded<T>(T record, byte[] body, int bytes) {}
