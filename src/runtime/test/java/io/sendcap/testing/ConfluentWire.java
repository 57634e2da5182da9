package io.sendcap.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.avro.ScheduledSend;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DatumWriter;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;

/**
 * The Confluent wire format as a campaign engine writes it and a delivery worker reads it, against
 * a schema registry's Confluent-compatible REST API: schemas registered and fetched with the JDK's
 * HTTP client, records framed and unframed with Avro alone. Shares no code with sendcap's own
 * client and serde, so that tests of those check them against an independent reading of the format.
 */
public final class ConfluentWire {
  private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String url;
  private final HttpClient http =
      HttpClient.newBuilder()
          .proxy(HttpClient.Builder.NO_PROXY)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
  private final Map<Integer, Schema> schemas = new ConcurrentHashMap<>();

  /** A client of the registry whose Confluent-compatible API is at {@code url}. */
  public ConfluentWire(String url) {
    this.url = url.replaceAll("/+$", "");
  }

  /** An answer of the registry: its status and JSON body. */
  public record Answer(int status, JsonNode body) {}

  /**
   * Registers a schema under a subject ({@code POST /subjects/{subject}/versions}) and returns its
   * id.
   *
   * @throws IllegalStateException if the registry refuses it
   */
  public int register(String subject, Schema schema) {
    Answer answer = tryRegister(subject, schema);
    if (answer.status() != 200) {
      throw new IllegalStateException(
          "the registry refused a schema under " + subject + ": " + answer);
    }
    return answer.body().path("id").intValue();
  }

  /** Asks the registry to register a schema under a subject, and returns its answer. */
  public Answer tryRegister(String subject, Schema schema) {
    return send(
        "POST",
        "/subjects/" + encode(subject) + "/versions",
        JSON.createObjectNode().put("schema", schema.toString()).toString());
  }

  /**
   * The id of the newest schema under a subject ({@code GET /subjects/{subject}/versions/latest}).
   */
  public int latestId(String subject) {
    Answer answer = send("GET", "/subjects/" + encode(subject) + "/versions/latest", null);
    if (answer.status() != 200) {
      throw new IllegalStateException("no schema under " + subject + ": " + answer);
    }
    return answer.body().path("id").intValue();
  }

  /** The schema of an id ({@code GET /schemas/ids/{id}}), fetched once. */
  public Schema schema(int id) {
    return schemas.computeIfAbsent(
        id,
        i -> {
          Answer answer = send("GET", "/schemas/ids/" + i, null);
          if (answer.status() != 200) {
            throw new IllegalStateException("the registry has no schema id " + i + ": " + answer);
          }
          return new Schema.Parser().parse(answer.body().path("schema").asText());
        });
  }

  /** A record in the Confluent wire format: byte 0, the id, the record in Avro binary. */
  public static byte[] frame(int id, GenericRecord record) {
    return frame(
        id, record.getSchema(), new GenericDatumWriter<GenericRecord>(record.getSchema()), record);
  }

  /** A send in the Confluent wire format, written with sendcap's schema under {@code id}. */
  public static byte[] frame(int id, ScheduledSend send) {
    return frame(id, ScheduledSend.SCHEMA$, new SpecificDatumWriter<>(ScheduledSend.class), send);
  }

  private static <T> byte[] frame(int id, Schema schema, DatumWriter<T> writer, T record) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(ByteBuffer.allocate(5).put((byte) 0).putInt(id).array());
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    try {
      writer.write(record, encoder);
      encoder.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write a " + schema.getFullName(), e);
    }
    return out.toByteArray();
  }

  /**
   * A send as a writer of another version of its schema holds it: sendcap's fields resolved into
   * {@code writer}'s, whose other fields take their defaults.
   */
  public static GenericRecord as(ScheduledSend send, Schema writer) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    try {
      new SpecificDatumWriter<>(ScheduledSend.class).write(send, encoder);
      encoder.flush();
      return new GenericDatumReader<GenericRecord>(ScheduledSend.SCHEMA$, writer)
          .read(null, DecoderFactory.get().binaryDecoder(out.toByteArray(), null));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The schema id of a record in the Confluent wire format. */
  public static int schemaId(byte[] framed) {
    if (framed.length < 5 || framed[0] != 0) {
      throw new IllegalStateException(
          "not in the Confluent wire format: " + framed.length + " bytes");
    }
    return ByteBuffer.wrap(framed, 1, 4).getInt();
  }

  /**
   * Decodes a record in the Confluent wire format as a delivery worker does: the writer's schema
   * fetched from the registry by the id in the record, resolved against the class's.
   */
  public <T extends SpecificRecord> T decode(byte[] framed, Class<T> type) {
    Schema writer = schema(schemaId(framed));
    Schema reader = SpecificData.get().getSchema(type);
    try {
      return new SpecificDatumReader<T>(writer, reader)
          .read(null, DecoderFactory.get().binaryDecoder(framed, 5, framed.length - 5, null));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** ScheduledSend with one more field, {@code priority}: an optional int, null by default. */
  public static Schema scheduledSendWithPriority() {
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      fields.add(new Schema.Field(f, f.schema()));
    }
    fields.add(
        new Schema.Field(
            "priority",
            Schema.createUnion(Schema.create(Schema.Type.NULL), Schema.create(Schema.Type.INT)),
            "Added by a newer campaign engine.",
            Schema.Field.NULL_DEFAULT_VALUE));
    Schema s = ScheduledSend.SCHEMA$;
    return Schema.createRecord(s.getName(), s.getDoc(), s.getNamespace(), false, fields);
  }

  /**
   * ScheduledSend with one more field, {@code related}: an optional record {@code Related} whose
   * field {@code next} is an optional {@code Related}, null by default. A BACKWARD-compatible
   * change that makes the schema recursive.
   */
  public static Schema scheduledSendWithRelated() {
    Schema related = Schema.createRecord("Related", null, "io.sendcap.avro", false);
    related.setFields(
        List.of(
            new Schema.Field(
                "next",
                Schema.createUnion(Schema.create(Schema.Type.NULL), related),
                null,
                Schema.Field.NULL_DEFAULT_VALUE)));
    List<Schema.Field> fields = new ArrayList<>();
    for (Schema.Field f : ScheduledSend.SCHEMA$.getFields()) {
      fields.add(new Schema.Field(f, f.schema()));
    }
    fields.add(
        new Schema.Field(
            "related",
            Schema.createUnion(Schema.create(Schema.Type.NULL), related),
            "Added by a newer campaign engine.",
            Schema.Field.NULL_DEFAULT_VALUE));
    Schema s = ScheduledSend.SCHEMA$;
    return Schema.createRecord(s.getName(), s.getDoc(), s.getNamespace(), false, fields);
  }

  /**
   * A send in the Confluent wire format under {@code id} of {@link #scheduledSendWithRelated()},
   * its {@code related} field nested {@code depth} records deep; written byte by byte, as Avro's
   * writer would overflow its stack at such depths.
   */
  public static byte[] frameNested(int id, ScheduledSend send, int depth) {
    byte[] own = frame(id, send);
    byte[] framed = java.util.Arrays.copyOf(own, own.length + depth + 1);
    java.util.Arrays.fill(framed, own.length, own.length + depth, (byte) 2);
    return framed;
  }

  /** A record with {@code priority} set, of {@link #scheduledSendWithPriority()}. */
  public static GenericRecord withPriority(ScheduledSend send, Schema withPriority, int priority) {
    GenericRecord record = as(send, withPriority);
    record.put("priority", priority);
    return record;
  }

  private Answer send(String method, String path, String body) {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(url + path))
            .timeout(Duration.ofSeconds(10))
            .header("Accept", CONTENT_TYPE);
    if (body == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request
          .header("Content-Type", CONTENT_TYPE)
          .method(method, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
    }
    try {
      HttpResponse<String> response =
          http.send(request.build(), HttpResponse.BodyHandlers.ofString());
      return new Answer(response.statusCode(), json(response.body()));
    } catch (IOException e) {
      throw new UncheckedIOException(method + " " + url + path + " failed", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  private static JsonNode json(String text) {
    if (text == null || text.isBlank()) {
      return JSON.nullNode();
    }
    try {
      return JSON.readTree(text);
    } catch (IOException e) {
      return JSON.getNodeFactory().textNode(text);
    }
  }

  private static String encode(String subject) {
    return URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
