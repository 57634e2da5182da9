package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err));
    cli.setOut(new PrintWriter(new StringWriter()));
    return cli.execute(args);
  }

  @Test
  void aBadConfigurationFailsStartUpListingEveryProblem(@TempDir Path dir) throws IOException {
    Path config = dir.resolve("bad.properties");
    Files.writeString(config, "cap.clock=sundial\nbatch.max.wait.ms=-5\n");

    assertThat(run("run", "--config", config.toString())).isEqualTo(2);
    assertThat(err.toString())
        .contains("sendcap: invalid configuration:")
        .contains("cap.clock=\"sundial\" is invalid: one of wall, event")
        .contains("batch.max.wait.ms=\"-5\" is invalid: a whole number from 1 to 2147483647")
        .doesNotContain("Exception");
  }

  @Test
  void theProblemsOfTheConfigurationAndItsPolicyFileAreListedTogether(@TempDir Path dir)
      throws IOException {
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(policies, "default:\n  caps: [{window: 1x, limit: 1}]\n");
    Path config = dir.resolve("bad.properties");
    Files.writeString(config, "cap.mode=loud\npolicies.file=" + policies + "\n");

    assertThat(run("run", "--config", config.toString())).isEqualTo(2);
    assertThat(err.toString())
        .contains(config + ": cap.mode=\"loud\" is invalid: one of enforce, shadow")
        .contains(policies + ": default.caps[0].window=\"1x\" is invalid")
        .doesNotContain("Exception");
  }

  @Test
  void aMissingPolicyFileIsNamed(@TempDir Path dir) throws IOException {
    Path config = dir.resolve("app.properties");
    Files.writeString(config, "policies.file=" + dir.resolve("nope.yaml") + "\n");

    assertThat(run("run", "--config", config.toString())).isEqualTo(2);
    assertThat(err.toString()).contains("nope.yaml").contains("cannot read the policy file");
  }

  @Test
  void anUnknownOptionIsAUsageError() {
    assertThat(run("demo", "--sendz", "5")).isEqualTo(2);
    assertThat(err.toString())
        .contains("Unknown options: '--sendz'")
        .contains("Possible solutions: --sends");
  }
}
