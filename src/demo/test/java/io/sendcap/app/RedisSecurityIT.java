package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.sendcap.embedded.Certificates;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.FreePorts;
import io.sendcap.testing.CapturedLogs;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * sendcap against a Redis that requires TLS and an ACL user: a blast capped through it with the
 * least the README's rule grants, and each refusal (wrong password, a command missing from the ACL,
 * an untrusted certificate) failing start-up with one line naming what to check, no password in any
 * log line, error, metric or health body.
 *
 * <p>The server's plain port, on loopback, keeps its default user for the harness (PING at start,
 * ACL SETUSER); sendcap connects only to its TLS port, as its ACL user.
 */
class RedisSecurityIT {
  private static final String USER = "sendcap";
  private static final String PASSWORD = "pw-" + Long.toHexString(System.nanoTime()) + "-secret";

  private static final String INPUT = "sends-secured";

  private static TestKafka kafka;
  private static EmbeddedRedis redis;
  private static Certificates certificates;
  private static int tlsPort;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
    certificates = Certificates.create(dir);
    tlsPort = FreePorts.pick();
    redis = EmbeddedRedis.startWith(certificates.redisTlsOptions(tlsPort));
    setUser(readmeRule().replace("PASSWORD", PASSWORD));
    kafka.createTopics(4, INPUT, "deliveries-secured", "suppressed-secured", "dlq-secured");
  }

  @AfterAll
  static void stop() {
    if (redis != null) {
      redis.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  /** The ACL rule of README's "Running against a secured Redis", as an operator copies it. */
  static String readmeRule() throws IOException {
    List<String> rules =
        Files.readAllLines(Path.of("README.md")).stream()
            .filter(line -> line.startsWith("ACL SETUSER " + USER + " on "))
            .toList();
    assertThat(rules).as("README's ACL rule for sendcap's Redis user").hasSize(1);
    return rules.get(0);
  }

  /** Runs {@code ACL SETUSER ...} over the harness's plain connection. */
  private static void setUser(String rule) {
    List<String> words = new ArrayList<>(Arrays.asList(rule.split(" ")));
    assertThat(words.subList(0, 2)).containsExactly("ACL", "SETUSER");
    RedisClient client = RedisClient.create(redis.uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      CommandArgs<String, String> args = new CommandArgs<>(StringCodec.UTF8).add("SETUSER");
      words.subList(2, words.size()).forEach(args::add);
      c.sync().dispatch(CommandType.ACL, new StatusOutput<>(StringCodec.UTF8), args);
    } finally {
      client.shutdown();
    }
  }

  private static String secured(String user, String password) {
    return "rediss://" + user + ":" + password + "@127.0.0.1:" + tlsPort;
  }

  /** The settings of an application on this test's topics, with the output topics of config(). */
  private static Properties settings(String app, String uri, boolean trusted) {
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), uri, app);
    p.setProperty("topic.input", INPUT);
    if (trusted) {
      p.setProperty("cap.redis.ssl.truststore.location", certificates.truststore().toString());
      p.setProperty("cap.redis.ssl.truststore.password", certificates.password());
    }
    return p;
  }

  @Test
  void aBlastIsCappedThroughTlsAsTheReadmesLeastPrivilegeUserWithNoPasswordShown()
      throws Exception {
    List<ProducerRecord<byte[], byte[]>> input = scenario.records(INPUT, 3_000, 400, 20, 30, 17);
    Properties p = settings("app-secured", secured(USER, PASSWORD), true);
    CapturedLogs logs = new CapturedLogs();
    List<String> bodies = new ArrayList<>();
    try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-secured"));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(),
                "deliveries-secured",
                "suppressed-secured",
                "dlq-secured")) {
      List<CapScenario.Outcome> outcomes =
          scenario.assertBlastDecidedAsTheModel(
              kafka.bootstrapServers(),
              input,
              reader,
              "deliveries-secured",
              "suppressed-secured",
              p);
      assertThat(outcomes).anyMatch(o -> !o.allowed()).anyMatch(CapScenario.Outcome::allowed);
      for (String path : List.of("/metrics", "/health/ready", "/health/live")) {
        bodies.add(get(app.httpPort(), path));
      }
    } finally {
      logs.close();
    }
    assertThat(CapScenario.loggedSends(redis.uri())).as("sends logged in Redis").isPositive();
    List<String> lines = logs.lines();
    assertThat(lines).anyMatch(l -> l.contains("settings:")).noneMatch(l -> l.contains(PASSWORD));
    assertThat(String.join("\n", lines)).contains("[hidden]");
    assertThat(bodies).isNotEmpty().noneMatch(b -> b.contains(PASSWORD));
  }

  @Test
  void aWrongPasswordFailsStartUpNamingTheSettingAndNotThePassword() {
    CapturedLogs logs = new CapturedLogs();
    try {
      assertThatThrownBy(
              () ->
                  SendcapApp.start(
                      CapScenario.config(
                          settings("app-wrong", secured(USER, "not-" + PASSWORD), true),
                          "-secured")))
          .isInstanceOf(SendcapApp.StartupException.class)
          .hasMessageContaining("Redis refused the user name and password of cap.redis.uri")
          .hasMessageContaining("WRONGPASS")
          .hasMessageContaining("rediss://sendcap:[hidden]@127.0.0.1:" + tlsPort)
          .hasMessageNotContaining(PASSWORD)
          .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
    } finally {
      logs.close();
    }
    assertThat(logs.lines()).noneMatch(l -> l.contains(PASSWORD));
  }

  @Test
  void aCommandMissingFromTheAclFailsStartUpNamingItAndTheReadme() throws IOException {
    String user = "sendcap-no-evalsha";
    String password = PASSWORD + "-2";
    setUser(
        readmeRule()
            .replace("SETUSER " + USER + " ", "SETUSER " + user + " ")
            .replace("PASSWORD", password)
            .replace(" +evalsha", ""));
    assertThatThrownBy(
            () ->
                SendcapApp.start(
                    CapScenario.config(
                        settings("app-acl", secured(user, password), true), "-secured")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("Redis's ACL refuses sendcap's user a command or key it needs")
        .hasMessageContaining("NOPERM")
        .hasMessageContaining("evalsha")
        .hasMessageContaining("README, \"Running against a secured Redis\"")
        .hasMessageNotContaining(password);
  }

  @Test
  void anUntrustedCertificateFailsStartUpNamingTheTrustStoreSetting() {
    assertThatThrownBy(
            () ->
                SendcapApp.start(
                    CapScenario.config(
                        settings("app-untrusted", secured(USER, PASSWORD), false), "-secured")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("Redis's TLS certificate is not trusted")
        .hasMessageContaining("cap.redis.ssl.truststore.location")
        .hasMessageNotContaining(PASSWORD);
  }

  private static String get(int port, String path) throws IOException, InterruptedException {
    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    return response.body();
  }
}
