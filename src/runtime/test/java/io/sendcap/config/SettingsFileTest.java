package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * {@code config/sendcap.properties} is what the table of settings writes: every key, its default
 * and its comment come from {@link Settings}, so the file, the validation and the settings line
 * cannot drift apart.
 */
class SettingsFileTest {
  private static final Path FILE = Path.of("config", "sendcap.properties");

  /** Where the expected file is written when the check fails, to copy over the real one. */
  private static final Path EXPECTED = Path.of("target", "runtime", "sendcap.properties");

  @Test
  void theConfigurationFileIsTheTablesOwn() throws IOException {
    String expected = Settings.propertiesFile();
    String actual = Files.readString(FILE, StandardCharsets.UTF_8);
    if (!actual.equals(expected)) {
      Files.createDirectories(EXPECTED.getParent());
      Files.writeString(EXPECTED, expected, StandardCharsets.UTF_8);
    }
    assertThat(actual)
        .as(
            FILE
                + " differs from the table of settings (Settings.java); the table's version is in "
                + EXPECTED
                + ": cp "
                + EXPECTED
                + " "
                + FILE)
        .isEqualTo(expected);
  }

  @Test
  void everyDefaultOfTheFileIsValidAndIsWhatAnEmptyConfigurationGets() throws IOException {
    Properties file = new Properties();
    try (var reader = Files.newBufferedReader(FILE)) {
      file.load(reader);
    }
    SendcapConfig fromFile = SendcapConfig.from(file, FILE.toString());
    SendcapConfig defaults = SendcapConfig.from(new Properties(), "defaults");

    assertThat(fromFile.effective()).isEqualTo(defaults.effective());
    assertThat(fromFile.streams()).isEqualTo(defaults.streams());
  }
}
