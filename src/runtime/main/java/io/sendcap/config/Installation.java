package io.sendcap.config;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where sendcap is installed: the directory of {@code bin/sendcap}, which passes it as the system
 * property {@value #HOME_PROPERTY}. Relative paths of the configuration ({@code --config}'s
 * default, {@code policies.file}) that do not exist in the current directory are looked up there,
 * so that the commands work from any directory.
 */
public final class Installation {
  /** The system property {@code bin/sendcap} sets to the installation's directory. */
  public static final String HOME_PROPERTY = "sendcap.home";

  private Installation() {}

  /**
   * {@code path} if it is absolute or exists in the current directory; else the installation's file
   * of that relative path, if there is one; else {@code path}, for its error to name.
   */
  public static Path resolve(Path path) {
    String home = System.getProperty(HOME_PROPERTY);
    if (path.isAbsolute() || Files.exists(path) || home == null) {
      return path;
    }
    Path installed = Path.of(home).resolve(path);
    return Files.exists(installed) ? installed : path;
  }
}
