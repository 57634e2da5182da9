package io.sendcap.config;

import java.io.IOException;
import java.io.StringReader;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Properties;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * References in setting values to where a secret is kept, replaced by what they name before the
 * settings are validated, in the syntax of Kafka's config providers:
 *
 * <ul>
 *   <li>{@code ${env:NAME}}: the environment variable {@code NAME} (as Kafka's {@code
 *       EnvVarConfigProvider} reads it);
 *   <li>{@code ${file:PATH}}: the contents of the file {@code PATH}, without its final line break
 *       (a Kubernetes or Docker secret mounted as a file);
 *   <li>{@code ${file:PATH:KEY}}: the value of {@code KEY} in the properties file {@code PATH} (as
 *       Kafka's {@code FileConfigProvider} reads it).
 * </ul>
 *
 * <p>A reference may be the whole value or part of it ({@code redis://:${env:REDIS_PASSWORD}@redis:
 * 6379}). Other providers' references ({@code ${vault:...}}) are left for Kafka's config providers.
 * A variable that is not set, or a file that cannot be read, is a problem naming the key and the
 * variable or file, never what it holds.
 */
final class ConfigReferences {
  /** The largest file a reference may name. */
  static final long MAX_FILE_BYTES = 1 << 20;

  private static final Pattern REFERENCE = Pattern.compile("\\$\\{(env|file):([^}]*)}");

  private final UnaryOperator<String> env;
  private final Problems problems;

  /**
   * Resolves references with these environment variables, reporting to {@code problems}.
   *
   * @param env the environment variables, by name ({@code System::getenv})
   * @param problems where a reference that cannot be resolved is reported; learns which values came
   *     from references, so that no problem repeats them
   */
  ConfigReferences(UnaryOperator<String> env, Problems problems) {
    this.env = env;
    this.problems = problems;
  }

  /** A copy of {@code props} with every reference replaced by what it names. */
  Properties resolve(Properties props) {
    Properties resolved = new Properties();
    for (String key : props.stringPropertyNames()) {
      String raw = props.getProperty(key);
      String value = resolve(key, raw);
      if (!value.equals(raw)) {
        problems.fromReference(key, raw, value);
      }
      resolved.setProperty(key, value);
    }
    return resolved;
  }

  private String resolve(String key, String raw) {
    Matcher m = REFERENCE.matcher(raw);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String found =
          m.group(1).equals("env") ? variable(key, m.group(2)) : file(key, m.group(2).trim());
      m.appendReplacement(out, Matcher.quoteReplacement(found));
    }
    m.appendTail(out);
    return out.toString();
  }

  private String variable(String key, String name) {
    String value = env.apply(name);
    if (value == null) {
      problems.add(key + ": environment variable " + name + " is not set");
      return "";
    }
    return value;
  }

  private String file(String key, String reference) {
    int colon = reference.lastIndexOf(':');
    Path path = Path.of(colon < 0 ? reference : reference.substring(0, colon));
    String contents = read(key, path);
    if (contents == null || colon < 0) {
      return contents == null ? "" : withoutFinalLineBreak(contents);
    }
    String name = reference.substring(colon + 1);
    Properties file = new Properties();
    try {
      file.load(new StringReader(contents));
    } catch (IOException | IllegalArgumentException e) {
      problems.add(key + ": " + path + " is not a properties file");
      return "";
    }
    String value = file.getProperty(name);
    if (value == null) {
      problems.add(key + ": " + path + " has no key " + name);
      return "";
    }
    return value;
  }

  /** The file's contents, or null when it cannot be read (a problem says why). */
  private String read(String key, Path path) {
    try {
      if (Files.size(path) > MAX_FILE_BYTES) {
        problems.add(key + ": " + path + " is larger than " + MAX_FILE_BYTES + " bytes");
        return null;
      }
      return Files.readString(path);
    } catch (NoSuchFileException e) {
      problems.add(key + ": cannot read " + path + " (no such file)");
    } catch (AccessDeniedException e) {
      problems.add(key + ": cannot read " + path + " (permission denied)");
    } catch (IOException e) {
      problems.add(key + ": cannot read " + path + " (" + e.getClass().getSimpleName() + ")");
    }
    return null;
  }

  private static String withoutFinalLineBreak(String s) {
    if (s.endsWith("\r\n")) {
      return s.substring(0, s.length() - 2);
    }
    return s.endsWith("\n") ? s.substring(0, s.length() - 1) : s;
  }
}
