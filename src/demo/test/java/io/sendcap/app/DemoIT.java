package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.sendcap.testing.Cli;
import io.sendcap.testing.ForkedSendcap;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sendcap demo} as a newcomer runs it, on its own embedded Kafka and Redis. */
class DemoIT {
  @Test
  void theDemoDecidesEverySendAndEndsWithAJsonSummary() throws Exception {
    Cli.Result run =
        Cli.run("demo", "--sends", "20000", "--users", "2000", "--poison-rate", "0.01", "--json");

    assertThat(run.exit()).isZero();
    assertThat(run.lines()).anyMatch(l -> l.startsWith("suppressed"));
    JsonNode summary = run.lastLineJson();
    long sends = summary.get("sends").asLong();
    assertThat(sends).isEqualTo(20_000);
    assertThat(
            summary.get("allowed").asLong()
                + summary.get("suppressed").asLong()
                + summary.get("dlq").asLong())
        .isEqualTo(sends);
    assertThat(summary.get("dlq").asLong()).isBetween(100L, 300L);
    assertThat(summary.get("suppressed").asLong()).isPositive();
    assertThat(summary.get("elapsed_ms").asLong()).isPositive();
    assertThat(summary.get("sends_per_s").asLong()).isPositive();
    assertThat(summary.get("confluent_framed").asLong()).isZero();
  }

  @Test
  void withASchemaRegistryTheSameBlastTravelsInTheConfluentFramingAndIsDecidedTheSame() {
    String[] blast = {"demo", "--sends", "6000", "--users", "600", "--seed", "7", "--json"};
    Cli.Result plain = Cli.run(blast);
    Cli.Result framed = Cli.run(with(blast, "--schema-registry"));

    assertThat(framed.exit()).as(framed.err()).isZero();
    JsonNode withRegistry = framed.lastLineJson();
    JsonNode without = plain.lastLineJson();
    // Every delivery and suppression the demo read back was in the Confluent wire format ...
    assertThat(withRegistry.get("confluent_framed").asLong())
        .isEqualTo(withRegistry.get("allowed").asLong() + withRegistry.get("suppressed").asLong())
        .isPositive();
    assertThat(without.get("confluent_framed").asLong()).isZero();
    // ... and the framing changed nothing that was decided.
    for (String count : List.of("sends", "allowed", "suppressed", "dlq")) {
      assertThat(withRegistry.get(count).asLong()).as(count).isEqualTo(without.get(count).asLong());
    }
  }

  @Test
  void aSignalStopsTheDemoMidBlastWithEverythingItStarted(@TempDir Path dir) throws Exception {
    ForkedSendcap demo =
        ForkedSendcap.start(
            List.of("demo", "--sends", "5000000", "--users", "500000"),
            dir.resolve("demo.log"),
            Duration.ofMinutes(2),
            ForkedSendcap.STARTED);

    // SIGTERM; Ctrl-C's SIGINT starts the same shutdown of the JVM.
    demo.close();

    String log = demo.output();
    assertThat(demo.exitValue()).as(log).isEqualTo(128 + 15);
    assertThat(log)
        .contains("sendcap demo: stopped; the embedded servers are stopped and their files deleted")
        .doesNotContain("sends/s");
    Matcher kafka = Pattern.compile("\\(data in (\\S+)\\)").matcher(log);
    Matcher redis =
        Pattern.compile("Redis accepts clients at redis://127.0.0.1:(\\d+)").matcher(log);
    assertThat(kafka.find()).as(log).isTrue();
    assertThat(redis.find()).as(log).isTrue();
    assertThat(Path.of(kafka.group(1))).as("the broker's data").doesNotExist();
    assertThat(listening(Integer.parseInt(redis.group(1)))).as("Redis listening").isFalse();
  }

  private static boolean listening(int port) {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      return true;
    } catch (IOException refused) {
      return false;
    }
  }

  private static String[] with(String[] args, String more) {
    String[] all = Arrays.copyOf(args, args.length + 1);
    all[args.length] = more;
    return all;
  }
}
