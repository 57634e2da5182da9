package io.sendcap.serde;

import org.apache.avro.Schema;

/**
 * Writer schemas of ScheduledSend that a registry accepts as BACKWARD-compatible and that recurse.
 */
final class RecursiveSchemas {
  private RecursiveSchemas() {}

  /** ScheduledSend with an optional recursive field {@code related} added at its end. */
  static Schema withRelated() {
    return new Schema.Parser()
        .parse(
            """
            {"type":"record","name":"ScheduledSend","namespace":"io.sendcap.avro","fields":[
             {"name":"messageId","type":"string"},
             {"name":"campaignId","type":"string"},
             {"name":"userId","type":"long"},
             {"name":"channel","type":{"type":"enum","name":"Channel","symbols":["EMAIL","PUSH","SMS","IN_APP"]}},
             {"name":"scheduledAt","type":{"type":"long","logicalType":"timestamp-millis"}},
             {"name":"transactional","type":"boolean","default":false},
             {"name":"userTimeZone","type":["null","string"],"default":null},
             {"name":"attributes","type":{"type":"map","values":"string"},"default":{}},
             {"name":"related","type":["null",{"type":"record","name":"Related","fields":[
               {"name":"next","type":["null","Related"],"default":null}]}],"default":null}
            ]}""");
  }

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
