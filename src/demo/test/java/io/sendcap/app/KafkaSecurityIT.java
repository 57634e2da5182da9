package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.embedded.Certificates;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.SecuredAccess;
import io.sendcap.embedded.SecuredSetup;
import io.sendcap.testing.CapturedLogs;
import io.sendcap.testing.Cli;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * sendcap against a broker with a SASL_SSL listener (SCRAM-SHA-512, a certificate made for the
 * test), the StandardAuthorizer and {@code allow.everyone.if.no.acl.found=false}: a blast capped
 * with exactly the ACLs README lists for sendcap's principal, the tools as the principals of their
 * users, and each refusal (wrong password, a missing ACL, an untrusted certificate) failing with
 * one line that names what to check and no password.
 *
 * <p>The harness creates topics, publishes segments, produces the blast and reads the outputs over
 * the broker's internal plaintext listener, whose anonymous principal is a super user.
 */
class KafkaSecurityIT {
  private static final String PASSWORD = "pw-" + Long.toHexString(System.nanoTime()) + "-secret";
  private static final String APP = "sendcap";
  private static final List<String> TOPICS =
      List.of("campaign-sends", "deliveries", "suppressed", "campaign-sends-dlq", "segments");

  private static EmbeddedKafka kafka;
  private static EmbeddedRedis redis;
  private static Certificates certificates;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws Exception {
    certificates = Certificates.create(dir);
    kafka =
        EmbeddedKafka.start(
            null,
            0,
            new EmbeddedKafka.Security(
                certificates,
                Map.of(
                    "sendcap", PASSWORD,
                    "sendcap-partial", PASSWORD,
                    "engine", PASSWORD,
                    "analyst", PASSWORD,
                    "operator", PASSWORD)));
    redis = EmbeddedRedis.start();
    CapScenario.writeFiles(dir);
    try (Admin admin = admin()) {
      List<NewTopic> topics = new ArrayList<>();
      TOPICS.forEach(t -> topics.add(new NewTopic(t, 4, (short) 1)));
      topics.add(
          new NewTopic("policies", 1, (short) 1)
              .configs(
                  Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT)));
      admin.createTopics(topics).all().get();
      List<AclBinding> acls = new ArrayList<>(readmeAcls("sendcap"));
      // the partial principal: README's ACLs without the outputs' WRITE
      readmeAcls("sendcap-partial").stream()
          .filter(
              b ->
                  b.entry().operation() != AclOperation.WRITE
                      || b.pattern().resourceType() != ResourceType.TOPIC)
          .forEach(acls::add);
      acls.addAll(topicAcls("engine", "campaign-sends", AclOperation.WRITE));
      acls.addAll(topicAcls("analyst", "deliveries", AclOperation.READ));
      acls.addAll(topicAcls("analyst", "suppressed", AclOperation.READ));
      for (String t : List.of("segments", "policies")) {
        acls.addAll(topicAcls("operator", t, AclOperation.READ));
        acls.addAll(topicAcls("operator", t, AclOperation.WRITE));
      }
      admin.createAcls(acls).all().get();
    }
    CapScenario.publishSegments(kafka.adminBootstrapServers());
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

  private static Admin admin() {
    return Admin.create(
        Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.adminBootstrapServers()));
  }

  /** A right on one topic and the DESCRIBE that goes with it. */
  private static List<AclBinding> topicAcls(String user, String topic, AclOperation op) {
    ResourcePattern pattern = new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL);
    return List.of(
        new AclBinding(pattern, allow(user, op)),
        new AclBinding(pattern, allow(user, AclOperation.DESCRIBE)));
  }

  private static AccessControlEntry allow(String user, AclOperation op) {
    return new AccessControlEntry("User:" + user, "*", op, AclPermissionType.ALLOW);
  }

  /**
   * The ACLs of README's "Running against a secured Kafka cluster", each line the arguments of one
   * {@code kafka-acls.sh --add} as an operator runs it, granted to {@code user}.
   */
  static List<AclBinding> readmeAcls(String user) throws IOException {
    List<String> lines =
        Files.readAllLines(Path.of("README.md")).stream()
            .filter(l -> l.startsWith("--add --allow-principal User:sendcap "))
            .toList();
    assertThat(lines).as("README's ACL lines for sendcap's principal").hasSizeGreaterThan(3);
    List<AclBinding> bindings = new ArrayList<>();
    lines.forEach(line -> bindings.addAll(SecuredAccess.bindings(line, "User:" + user)));
    return bindings;
  }

  /** The client settings of a user of the secured listener, as README gives them. */
  private static Properties secured(String user, String password, boolean trusted) {
    Properties p = SecuredSetup.scramSettings(kafka.bootstrapServers(), user, password);
    if (trusted) {
      p.setProperty("ssl.truststore.location", certificates.truststore().toString());
      p.setProperty("ssl.truststore.password", certificates.password());
    }
    return p;
  }

  private static Properties appSettings(String user, String password, boolean trusted) {
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), APP);
    p.putAll(secured(user, password, trusted));
    return p;
  }

  /** A configuration file for the tools, as {@code --config} takes it. */
  private static Path configFile(String user) throws IOException {
    Properties p = appSettings(user, PASSWORD, true);
    Path file = dir.resolve(user + ".properties");
    try (Writer w = Files.newBufferedWriter(file)) {
      p.store(w, null);
    }
    return file;
  }

  @Test
  void aBlastIsCappedWithTheReadmesAclsAndTheToolsWorkAsTheirUsers() throws Exception {
    List<ProducerRecord<byte[], byte[]>> input =
        scenario.records("campaign-sends", 2_000, 300, 20, 20, 23);
    Properties p = appSettings("sendcap", PASSWORD, true);
    CapturedLogs logs = new CapturedLogs();
    try (SendcapApp app = SendcapApp.start(CapScenario.config(p, ""));
        TopicReader reader =
            new TopicReader(
                kafka.adminBootstrapServers(), "deliveries", "suppressed", "campaign-sends-dlq")) {
      CapScenario.produce(kafka.adminBootstrapServers(), input);
      List<CapScenario.Outcome> outcomes =
          scenario.outcomes(
              reader.awaitRecords(input.size(), Duration.ofMinutes(2)), "deliveries", "suppressed");
      scenario.assertEachInputOnce(input, outcomes);
      scenario.assertDecisionsMatchTheModel(
          scenario.sendsOf(input),
          outcomes,
          CapScenario.config(p, "").limiter().idempotencyRetention());

      // the tools, each as the principal of the person who uses it
      Path sends = dir.resolve("more.jsonl");
      Files.writeString(
          sends,
          "{\"messageId\": \"tool-1\", \"campaignId\": \"c\", \"userId\": 7, \"channel\":"
              + " \"EMAIL\", \"scheduledAt\": \"now\"}\n");
      Cli.Result produced =
          Cli.run(
              "produce",
              "--config",
              configFile("engine").toString(),
              "--topic",
              "campaign-sends",
              "--file",
              sends.toString());
      assertThat(produced.exit()).as(produced.err()).isZero();
      long delivered =
          reader.awaitRecords(input.size() + 1, Duration.ofMinutes(1)).stream()
              .filter(r -> r.topic().equals("deliveries"))
              .count();
      Cli.Result consumed =
          Cli.run(
              "consume",
              "--config",
              configFile("analyst").toString(),
              "--topic",
              "deliveries",
              "--from-beginning",
              "--until-end",
              "--json");
      assertThat(consumed.exit()).as(consumed.err()).isZero();
      assertThat(consumed.lines()).as("deliveries read by the analyst").hasSize((int) delivered);
      Cli.Result report = Cli.run("report", "--config", configFile("analyst").toString(), "--json");
      assertThat(report.exit()).as(report.err()).isZero();
      Cli.Result segments =
          Cli.run("segments", "list", "--config", configFile("operator").toString());
      assertThat(segments.exit()).as(segments.err()).isZero();
      assertThat(segments.out()).contains("vip");
      Cli.Result policies =
          Cli.run("policies", "show", "--config", configFile("operator").toString());
      assertThat(policies.exit()).as(policies.err()).isZero();
      Cli.Result refused =
          Cli.run(
              "consume",
              "--config",
              configFile("engine").toString(),
              "--topic",
              "deliveries",
              "--from-beginning",
              "--until-end");
      assertThat(refused.exit()).isNotZero();
      assertThat(refused.err())
          .contains("Kafka's ACLs refuse this principal")
          .doesNotContain(PASSWORD);
      // sendcap's principal may describe suppressed (it writes it) but not read it
      Cli.Result unread =
          Cli.run(
              "consume",
              "--config",
              configFile("sendcap").toString(),
              "--topic",
              "suppressed",
              "--from-beginning",
              "--until-end");
      assertThat(unread.exit()).isNotZero();
      assertThat(unread.err())
          .contains(
              "sendcap: Kafka's ACLs refuse this principal: Not authorized to access topics:"
                  + " [suppressed]; "
                  + KafkaErrors.ACL_HELP);
    } finally {
      logs.close();
    }
    assertThat(logs.lines())
        .anyMatch(l -> l.contains("settings:") && l.contains("sasl.jaas.config=[hidden]"))
        .noneMatch(l -> l.contains(PASSWORD));
  }

  @Test
  void aWrongPasswordFailsStartUpNamingTheSetting() {
    assertThatThrownBy(
            () -> SendcapApp.start(CapScenario.config(appSettings("sendcap", "wrong", true), "")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("Kafka refused the credentials of sasl.jaas.config")
        .hasMessageNotContaining(PASSWORD)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }

  @Test
  void aMissingAclFailsStartUpNamingTheRightAndTheTopics() {
    assertThatThrownBy(
            () ->
                SendcapApp.start(
                    CapScenario.config(appSettings("sendcap-partial", PASSWORD, true), "")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessage(
            "Kafka's ACLs do not allow sendcap's principal WRITE on topic deliveries, WRITE on"
                + " topic suppressed, WRITE on topic campaign-sends-dlq; "
                + KafkaErrors.ACL_HELP);
  }

  @Test
  void anUntrustedCertificateFailsStartUpNamingTheTrustStoreSetting() {
    assertThatThrownBy(
            () -> SendcapApp.start(CapScenario.config(appSettings("sendcap", PASSWORD, false), "")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("the TLS handshake with Kafka failed")
        .hasMessageContaining("ssl.truststore.location")
        .hasMessageNotContaining(PASSWORD);
  }
}
