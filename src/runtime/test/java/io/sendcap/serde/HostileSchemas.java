package io.sendcap.serde;

import org.apache.avro.Schema;

/**
 * Writer schemas of ScheduledSend that a registry accepts and that exceed sendcap's bounds: nested
 * deep, or enormous. (The recursive one is {@code ConfluentWire.scheduledSendWithRelated()}.)
 */
final class HostileSchemas {
  private HostileSchemas() {}

  /** ScheduledSend with an optional field added that nests {@code depth} arrays. */
  static Schema withNestedArrays(int depth) {
    String type = "\"int\"";
    for (int i = 0; i < depth; i++) {
      type = "{\"type\":\"array\",\"items\":" + type + "}";
    }
    return extended("{\"name\":\"deep\",\"type\":[\"null\"," + type + "],\"default\":null}");
  }

  /** ScheduledSend with a documentation string of {@code chars} characters. */
  static Schema withLongDoc(int chars) {
    return extended(
        "{\"name\":\"long\",\"type\":[\"null\",\"int\"],\"default\":null,\"doc\":\""
            + "x".repeat(chars)
            + "\"}");
  }

  private static Schema extended(String field) {
    String own = io.sendcap.avro.ScheduledSend.SCHEMA$.toString();
    return new Schema.Parser().parse(own.substring(0, own.lastIndexOf(']')) + "," + field + "]}");
  }
}
