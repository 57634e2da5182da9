package io.sendcap.config;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
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

  /**
   * A {@code what} (for example "policy file") that cannot be read, saying why in a user's words:
   * it does not exist, it is a directory, it may not be read, or the system's own message.
   */
  public static InvalidConfigException unreadable(Path file, String what, IOException e) {
    String why;
    if (e instanceof NoSuchFileException) {
      why = "the " + what + " does not exist";
    } else if (Files.isDirectory(file)) {
      why = "the " + what + " is a directory";
    } else if (e instanceof AccessDeniedException) {
      why = "the " + what + " may not be read (permission denied)";
    } else {
      why = "cannot read the " + what + ": " + e.getMessage();
    }
    return new InvalidConfigException(file.toString(), List.of(why));
  }

  /** The problems, one message each. */
  public List<String> problems() {
    return problems;
  }
}
