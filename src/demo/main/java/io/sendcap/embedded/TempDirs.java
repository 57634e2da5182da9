package io.sendcap.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/** Temporary directories that the embedded servers and the demo create and delete. */
public final class TempDirs {
  private TempDirs() {}

  /** Creates a new empty directory in the system's temporary directory. */
  public static Path create(String prefix) {
    try {
      return Files.createTempDirectory(prefix);
    } catch (IOException e) {
      throw new UncheckedIOException("Could not create a temporary directory " + prefix + "*", e);
    }
  }

  /** Creates {@code dir} if needed, for data kept after the server stops; its absolute path. */
  static Path kept(Path dir) {
    try {
      return Files.createDirectories(dir).toAbsolutePath();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not create " + dir, e);
    }
  }

  /** Deletes a file, or a directory and everything in it; a missing path is not an error. */
  public static void delete(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      List<Path> paths = walk.sorted(Comparator.reverseOrder()).toList();
      for (Path path : paths) {
        Files.deleteIfExists(path);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("Could not delete " + dir, e);
    }
  }
}
