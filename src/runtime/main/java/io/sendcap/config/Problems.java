package io.sendcap.config;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Collects the problems of one source so that all of them are reported together.
 *
 * <p>No problem repeats a secret: a value of a {@linkplain Settings#isSecret(String) secret key} is
 * shown as {@code [hidden]}, one read from the environment or a file as the reference that named
 * it, and either is hidden wherever it appears in a message of another component (Kafka's).
 */
final class Problems {
  private static final String HIDDEN = "[hidden]";

  private final String source;
  private final Set<String> setOnTheCommandLine;
  private final List<String> messages = new ArrayList<>();
  private final Map<String, String> references = new HashMap<>();
  private final List<String> concealed = new ArrayList<>();

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

  /**
   * Records that {@code key}'s value {@code resolved} was read from the references in {@code raw}.
   */
  void fromReference(String key, String raw, String resolved) {
    references.put(key, raw);
    conceal(resolved);
  }

  /** The value of {@code key} as written, if it held references. */
  String reference(String key) {
    return references.get(key);
  }

  /** Hides {@code value} wherever a message repeats it. */
  void conceal(String value) {
    if (!value.isBlank()) {
      concealed.add(value);
      concealed.sort(Comparator.comparingInt(String::length).reversed());
    }
  }

  void add(String key, Object value, String allowed) {
    messages.add(prefix(key) + key + "=" + quote(shown(key, value)) + " is invalid: " + allowed);
  }

  /** Records a key that is not one of sendcap's own, without its value. */
  void unknown(String key, String hint) {
    messages.add(prefix(key) + key + " is invalid: unknown key; " + hint);
  }

  private String prefix(String key) {
    return setOnTheCommandLine.contains(key) ? COMMAND_LINE : "";
  }

  private Object shown(String key, Object value) {
    if (value != null && Settings.isSecret(key)) {
      return HIDDEN;
    }
    return references.containsKey(key) ? references.get(key) : value;
  }

  /** How a problem of a key given with {@code --set} begins. */
  static final String COMMAND_LINE = "--set ";

  void add(String message) {
    for (String value : concealed) {
      message = message.replace(value, HIDDEN);
    }
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
