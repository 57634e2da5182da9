package io.sendcap.segment;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * Reads segments from files of user ids: one decimal id per line, nothing else (a blank line or a
 * header fails with its line number), or from roaring bitmaps in the portable format.
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

  /** Reads a roaring bitmap in the portable format (32-bit, or the 64-bit extension). */
  public static UserIds readBitmap(Path file) {
    try {
      return UserIds.readPortable(java.nio.ByteBuffer.wrap(Files.readAllBytes(file)));
    } catch (NoSuchFileException e) {
      throw new SegmentFileException(file + ": no such file");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    } catch (IllegalArgumentException e) {
      throw new SegmentFileException(file + ": " + e.getMessage());
    }
  }

  /** A segment file that cannot be used, with the reason. */
  public static final class SegmentFileException extends RuntimeException {
    SegmentFileException(String message) {
      super(message);
    }
  }
}
