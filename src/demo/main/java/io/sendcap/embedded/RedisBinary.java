package io.sendcap.embedded;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finds a {@code redis-server} to run: the one on the PATH, or else the Linux x86-64 build of Redis
 * 6.2 shipped in the {@code com.github.codemonstur:embedded-redis} jar, extracted once per JVM.
 */
final class RedisBinary {
  /** The classpath resource of the bundled server. */
  static final String BUNDLED = "/redis-server-6.2.6-v5-linux-amd64";

  private static final Logger LOG = LoggerFactory.getLogger(RedisBinary.class);
  private static final String NAME = "redis-server";
  private static Path extracted;

  private RedisBinary() {}

  /**
   * Returns {@code redis-server} from the first PATH directory that holds it, else the bundled one.
   *
   * @throws IllegalStateException if neither is available on this machine
   */
  static Path locate() {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String directory : path.split(File.pathSeparator)) {
      Path candidate = Path.of(directory.isEmpty() ? "." : directory, NAME);
      if (Files.isExecutable(candidate)) {
        return candidate.toAbsolutePath();
      }
    }
    return bundled();
  }

  /** Returns the bundled server, extracting it on first use. */
  static synchronized Path bundled() {
    if (extracted != null) {
      return extracted;
    }
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch");
    if (!os.contains("linux") || !(arch.equals("amd64") || arch.equals("x86_64"))) {
      throw new IllegalStateException(
          "redis-server not found on PATH and no bundled build for "
              + os
              + "/"
              + arch
              + "; install Redis (Debian: apt-get install redis-server)");
    }
    try (InputStream in = RedisBinary.class.getResourceAsStream(BUNDLED)) {
      if (in == null) {
        throw new IllegalStateException(
            "redis-server not found on PATH, and the embedded-redis jar holding a bundled one is"
                + " not on the classpath; install Redis (Debian: apt-get install redis-server)");
      }
      Path file = Files.createTempFile("sendcap-redis-server-", "");
      file.toFile().deleteOnExit();
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      if (!file.toFile().setExecutable(true)) {
        throw new IllegalStateException("cannot make " + file + " executable");
      }
      LOG.info("redis-server not on PATH; using the bundled Redis 6.2 build at {}", file);
      extracted = file;
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot extract the bundled redis-server", e);
    }
  }
}
