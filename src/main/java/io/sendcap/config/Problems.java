package io.sendcap.config;

import java.util.ArrayList;
import java.util.List;

/** Collects the problems of one source so that all of them are reported together. */
final class Problems {
  private final String source;
  private final List<String> messages = new ArrayList<>();

  Problems(String source) {
    this.source = source;
  }

  void add(String key, Object value, String allowed) {
    messages.add(key + "=" + quote(value) + " is invalid: " + allowed);
  }

  void add(String message) {
    messages.add(message);
  }

  void throwIfAny() {
    if (!messages.isEmpty()) {
      throw new InvalidConfigException(source, messages);
    }
  }

  private static String quote(Object value) {
    return value == null ? "(missing)" : "\"" + value + "\"";
  }
}
