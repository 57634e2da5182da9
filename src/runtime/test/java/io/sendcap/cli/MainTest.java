package io.sendcap.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();

  private int run(String... args) {
    CommandLine cli = Main.commandLine();
    cli.setErr(new PrintWriter(err));
    cli.setOut(new PrintWriter(out));
    return cli.execute(args);
  }

  @Test
  void policiesValidateListsEveryCapWithItsAlgorithmAndTheGlobalCaps(@TempDir Path dir)
      throws IOException {
    Path policies = dir.resolve("policies.yaml");
    Files.writeString(
        policies,
        """
        segments:
          - name: new-users
            caps:
              - {window: 1d, limit: 1, algorithm: token-bucket}
              - {window: 7d, limit: 3}
        default:
          caps: [{window: 1d, limit: 2, channel: sms, algorithm: fixed-window}]
        global:
          - {name: campaign-budget, per: campaign, window: 1d, limit: 2000000}
          - {name: email-provider, per: channel, channel: EMAIL, window: 1s, limit: 5000}
          - {name: black-friday, campaign: bf-2026, window: 1h, limit: 100000, max-batch: 200}
        """);

    assertThat(run("policies", "validate", policies.toString())).isZero();
    assertThat(out.toString().lines())
        .containsExactly(
            policies + ": valid",
            "  1. new-users    1 per 1d token-bucket, 3 per 7d",
            "     default      2 per 1d (SMS) fixed-window",
            "  global caps, across users:",
            "     campaign-budget 2000000 per 1d for each campaign"
                + " (reserved in batches of up to 2000)",
            "     email-provider  5000 per 1s for each channel, EMAIL only"
                + " (reserved in batches of up to 5)",
            "     black-friday    100000 per 1h, campaign bf-2026 only"
                + " (reserved in batches of up to 200)");
  }

  @Test
  void aBadConfigurationFailsStartUpListingEveryProblem(@TempDir Path dir) throws IOException {
    Path config = dir.resolve("bad.properties");
    Files.writeString(config, "cap.clock=sundial\nbatch.max.wait.ms=-5\n");

    assertThat(run("run", "--config", config.toString())).isEqualTo(2);
    assertThat(err.toString())
        .contains("sendcap: invalid configuration:")
        .contains("cap.clock=\"sundial\" is invalid: one of wall, event")
        .contains("batch.max.wait.ms=\"-5\" is invalid: a whole number of milliseconds from 1")
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
    assertThat(err.toString()).contains("nope.yaml: the policy file does not exist");
  }

  @Test
  void anUnknownOptionIsAUsageError() {
    assertThat(run("consume", "--topic", "deliveries", "--topik", "x")).isEqualTo(2);
    assertThat(err.toString())
        .contains("Unknown options: '--topik'")
        .contains("Possible solutions: --topic");
  }

  @Test
  void aNegativeUserIdIsRefusedAsThePipelineRefusesIt() {
    assertThat(run("segments", "lookup", "-3")).isEqualTo(2);
    assertThat(err.toString())
        .contains("USERID -3 is negative")
        .contains("dead-letter topic")
        .doesNotContain("default policy");
  }

  @Test
  void everyToolWaitsForTheBrokersAsLongAsBrokerTimeoutSaysAndNamesTheSetting() {
    for (String[] tool :
        List.of(
            new String[] {"segments", "list"},
            new String[] {"consume", "--topic", "deliveries"},
            new String[] {"policies", "show"})) {
      err.getBuffer().setLength(0);
      List<String> args = new ArrayList<>(List.of(tool));
      args.addAll(
          List.of("--set", "bootstrap.servers=127.0.0.1:1", "--set", "broker.timeout.ms=1s"));

      assertThat(run(args.toArray(String[]::new))).as(String.join(" ", tool)).isEqualTo(2);
      assertThat(err.toString())
          .as(String.join(" ", tool))
          .contains("cannot reach Kafka at 127.0.0.1:1 within 1 s (bootstrap.servers)");
    }
  }
}
