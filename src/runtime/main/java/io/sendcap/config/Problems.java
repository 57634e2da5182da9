package io.sendcap.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** Collects the problems of one source so that all of them are reported together. */
final class Problems {
  private final String source;
  private final Set<String> setOnTheCommandLine;
  private final List<String> messages = new ArrayList<>();

  Problems(String source) {
    this(source, Set.of());
  }

  /**
   * Problems of {@code source}, except those of the keys in {@code setOnTheCommandLine}, which
   * {@code --set} gave: their messages say so.
   */
  Problems(String source, Set<String> setOnTheCommandLine) {
    this.source = source;
    this.setOnTheCommandLine = Set.copyOf(setOnTheCommandLine);
  }

  void add(String key, Object value, String allowed) {
    messages.add(
        (setOnTheCommandLine.contains(key) ? COMMAND_LINE : "")
            + key
            + "="
            + quote(value)
            + " is invalid: "
            + allowed);
  }

  /** How a problem of a key given with {@code --set} begins. */
  static final String COMMAND_LINE = "--set ";

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
