package io.sendcap.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.sendcap.config.Durations;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificRecord;

/**
 * Plain JSON for sendcap's Avro records, as people write and read it: one object with the Avro
 * field names, enums as their symbols, an optional field as its value or null, and timestamps as
 * ISO-8601 instants (epoch milliseconds are accepted too). When reading, a timestamp may also be
 * {@code now} or {@code now} plus or minus a duration ({@code now+5m}, {@code now-1d}), taken from
 * the time given to {@link #read(String, Class, Instant)}: example files stay usable as days pass.
 *
 * <p>This is not Avro's own JSON encoding, which wraps every union value in an object naming its
 * branch.
 */
public final class AvroJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

  private AvroJson() {}

  /** A JSON value that does not fit the schema; the message names the field. */
  static final class JsonMismatchException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    JsonMismatchException(String message) {
      super(message);
    }
  }

  /**
   * Reads one JSON object as a record of {@code type}; timestamps written relative to {@code now}
   * are taken from {@code now}.
   *
   * @throws JsonMismatchException if it is not JSON or does not fit the schema
   */
  public static <T extends SpecificRecord> T read(String json, Class<T> type, Instant now) {
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      com.fasterxml.jackson.core.JsonLocation at = e.getLocation();
      throw new JsonMismatchException(
          "not JSON"
              + (at == null || at.getColumnNr() < 1
                  ? ""
                  : " (it goes wrong at column " + at.getColumnNr() + ")")
              + "; each line is one JSON object, such as {\"messageId\": \"m-1\", ...}");
    }
    if (node == null || !node.isObject()) {
      throw new JsonMismatchException(
          "not a JSON object; each line is one, such as {\"messageId\": \"m-1\", ...}");
    }
    Schema schema = SpecificData.get().getSchema(type);
    SingleObjectAvroSerde.trustClassesOf(schema);
    @SuppressWarnings("unchecked")
    T record = (T) value(node, schema, schema.getName(), now);
    return record;
  }

  /** Writes a record as one line of JSON. */
  public static String write(SpecificRecord record) {
    return json(record, record.getSchema()).toString();
  }

  private static Object value(JsonNode node, Schema schema, String path, Instant now) {
    switch (schema.getType()) {
      case RECORD:
        return record(node, schema, path, now);
      case UNION:
        return union(node, schema, path, now);
      case STRING:
        require(node.isTextual(), path, "a string", node);
        return node.asText();
      case LONG:
        return schema.getLogicalType() instanceof LogicalTypes.TimestampMillis
            ? instant(node, path, now)
            : integral(node, path);
      case INT:
        return Math.toIntExact(integral(node, path));
      case BOOLEAN:
        require(node.isBoolean(), path, "true or false", node);
        return node.asBoolean();
      case ENUM:
        require(
            node.isTextual() && schema.hasEnumSymbol(node.asText()),
            path,
            "one of " + schema.getEnumSymbols(),
            node);
        return SpecificData.get().createEnum(node.asText(), schema);
      case MAP:
        require(node.isObject(), path, "an object", node);
        Map<String, Object> map = new HashMap<>();
        node.fields()
            .forEachRemaining(
                e ->
                    map.put(
                        e.getKey(),
                        value(e.getValue(), schema.getValueType(), path + "." + e.getKey(), now)));
        return map;
      default:
        throw new JsonMismatchException(path + ": type " + schema.getType() + " is not supported");
    }
  }

  private static Object record(JsonNode node, Schema schema, String path, Instant now) {
    require(node.isObject(), path, "an object", node);
    SpecificRecord record = (SpecificRecord) SpecificData.get().newRecord(null, schema);
    for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
      String name = names.next();
      if (schema.getField(name) == null) {
        throw new JsonMismatchException(
            path + "." + name + ": no such field in " + schema.getName());
      }
    }
    for (Schema.Field field : schema.getFields()) {
      JsonNode v = node.get(field.name());
      String at = path + "." + field.name();
      if (v == null) {
        if (!field.hasDefaultValue()) {
          throw new JsonMismatchException(at + " is missing");
        }
        record.put(field.pos(), SpecificData.get().deepCopy(field.schema(), defaultOf(field)));
      } else {
        record.put(field.pos(), value(v, field.schema(), at, now));
      }
    }
    return record;
  }

  private static Object defaultOf(Schema.Field field) {
    return SpecificData.get().getDefaultValue(field);
  }

  private static Object union(JsonNode node, Schema schema, String path, Instant now) {
    if (node.isNull()) {
      require(schema.isNullable(), path, "a value", node);
      return null;
    }
    for (Schema branch : schema.getTypes()) {
      if (branch.getType() != Schema.Type.NULL) {
        return value(node, branch, path, now);
      }
    }
    throw new JsonMismatchException(path + " must be null");
  }

  private static long integral(JsonNode node, String path) {
    require(node.canConvertToLong() && node.isIntegralNumber(), path, "a whole number", node);
    return node.asLong();
  }

  /** {@code now}, {@code now+5m} or {@code now-1d}: the units of {@link Durations}. */
  private static final Pattern RELATIVE = Pattern.compile("now(?:([+-])(\\S+))?");

  private static final String INSTANT =
      "an ISO-8601 instant, epoch milliseconds, now, or now+/- a duration such as now+5m";

  private static Instant instant(JsonNode node, String path, Instant now) {
    if (node.isIntegralNumber()) {
      return Instant.ofEpochMilli(node.asLong());
    }
    require(node.isTextual(), path, INSTANT, node);
    Matcher relative = RELATIVE.matcher(node.asText().trim());
    if (relative.matches()) {
      if (relative.group(1) == null) {
        return now;
      }
      Duration offset =
          Durations.parse(relative.group(2))
              .orElseThrow(
                  () ->
                      new JsonMismatchException(
                          path + ": the duration in " + node + " must be " + Durations.ALLOWED));
      return relative.group(1).equals("+") ? now.plus(offset) : now.minus(offset);
    }
    try {
      return Instant.parse(node.asText());
    } catch (DateTimeParseException e) {
      throw new JsonMismatchException(path + " must be " + INSTANT + ", was " + node);
    }
  }

  private static void require(boolean ok, String path, String what, JsonNode was) {
    if (!ok) {
      throw new JsonMismatchException(path + " must be " + what + ", was " + was);
    }
  }

  private static JsonNode json(Object value, Schema schema) {
    if (value == null) {
      return NODES.nullNode();
    }
    switch (schema.getType()) {
      case RECORD:
        SpecificRecord record = (SpecificRecord) value;
        ObjectNode object = NODES.objectNode();
        for (Schema.Field field : schema.getFields()) {
          object.set(field.name(), json(record.get(field.pos()), field.schema()));
        }
        return object;
      case UNION:
        int branch = SpecificData.get().resolveUnion(schema, value);
        return json(value, schema.getTypes().get(branch));
      case LONG:
        return value instanceof Instant at
            ? NODES.textNode(at.toString())
            : NODES.numberNode((Long) value);
      case INT:
        return NODES.numberNode((Integer) value);
      case BOOLEAN:
        return NODES.booleanNode((Boolean) value);
      case MAP:
        ObjectNode map = NODES.objectNode();
        ((Map<?, ?>) value)
            .forEach((k, v) -> map.set(k.toString(), json(v, schema.getValueType())));
        return map;
      default:
        return NODES.textNode(value.toString());
    }
  }
}
