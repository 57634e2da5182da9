package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InstallationTest {
  @AfterEach
  void forgetTheInstallation() {
    System.clearProperty(Installation.HOME_PROPERTY);
  }

  @Test
  void aRelativePathMissingHereIsTheInstallationsOne(@TempDir Path home) throws IOException {
    Path file = Path.of("config", "installed-only.properties");
    Files.createDirectories(home.resolve("config"));
    Files.writeString(home.resolve(file), "");
    System.setProperty(Installation.HOME_PROPERTY, home.toString());

    assertThat(Installation.resolve(file)).isEqualTo(home.resolve(file));
  }

  @Test
  void aPathThatIsHereOrNowhereStaysAsWritten(@TempDir Path home) {
    System.setProperty(Installation.HOME_PROPERTY, home.toString());
    Path here = Path.of("config", "sendcap.properties");
    Path nowhere = Path.of("config", "nowhere.properties");

    assertThat(Installation.resolve(here)).isEqualTo(here);
    assertThat(Installation.resolve(nowhere)).isEqualTo(nowhere);
  }
}
