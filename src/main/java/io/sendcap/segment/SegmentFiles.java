package io.sendcap.segment;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads segments from files of user ids: one decimal id per line, nothing else.
 *
 * <p>The file of segment {@code NAME} is {@code NAME.ids} in the segments directory.
 */
public final class SegmentFiles {
  private SegmentFiles() {}

  /** Reads one file of ids; a line that is not a non-negative id fails with its line number. */
  public static UserIds readIds(Path file) {
    UserIds ids = new UserIds();
    try (BufferedReader reader = Files.newBufferedReader(file)) {
      String line;
      int number = 0;
      while ((line = reader.readLine()) != null) {
        number++;
        ids.add(parseId(line, file, number));
      }
    } catch (NoSuchFileException e) {
      throw new SegmentFileException(file + ": no such file");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
    ids.optimize();
    return ids;
  }

  private static long parseId(String line, Path file, int number) {
    try {
      long id = Long.parseLong(line.trim());
      if (id >= 0) {
        return id;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new SegmentFileException(
        file
            + ":"
            + number
            + ": \""
            + line
            + "\" is not a user id; each line must hold one non-negative decimal id");
  }

  /**
   * Loads the named segments from {@code dir}, in the given priority order, into an index.
   *
   * @throws SegmentFileException naming every segment whose file is missing
   */
  public static RoaringSegmentIndex load(Path dir, List<String> namesInPriorityOrder) {
    List<String> missing =
        namesInPriorityOrder.stream().filter(n -> !Files.isRegularFile(file(dir, n))).toList();
    if (!missing.isEmpty()) {
      throw new SegmentFileException(
          "no file for segment(s) " + missing + " in " + dir + " (expected NAME.ids)");
    }
    Map<String, UserIds> segments = new LinkedHashMap<>();
    for (String name : namesInPriorityOrder) {
      segments.put(name, readIds(file(dir, name)));
    }
    return new RoaringSegmentIndex(segments);
  }

  /** The file that holds segment {@code name} in {@code dir}. */
  public static Path file(Path dir, String name) {
    return dir.resolve(name + ".ids");
  }

  /** A segment file that cannot be used, with the reason. */
  public static final class SegmentFileException extends RuntimeException {
    SegmentFileException(String message) {
      super(message);
    }
  }
}
