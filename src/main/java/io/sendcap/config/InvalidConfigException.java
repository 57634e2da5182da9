package io.sendcap.config;

import java.util.List;

/**
 * A configuration or policy file that cannot be used, with every problem found in it.
 *
 * <p>Each problem names the key, the value and what is allowed, so that one start-up attempt shows
 * everything to fix.
 */
public final class InvalidConfigException extends RuntimeException {
  private final List<String> problems;

  /** Creates the exception for the given source (a file name) and its problems. */
  public InvalidConfigException(String source, List<String> problems) {
    super(source + ": " + String.join("; ", problems));
    this.problems = List.copyOf(problems);
  }

  /** The problems, one message each. */
  public List<String> problems() {
    return problems;
  }
}
