package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sendcap.embedded.Certificates;
import io.sendcap.embedded.EmbeddedRedisCluster;
import io.sendcap.embedded.SecuredAccess;
import io.sendcap.testing.CapturedLogs;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * sendcap against a Redis Cluster that requires TLS (clients, cluster bus and replication) and an
 * ACL user on every node: a blast capped through it with the least README grants, a cluster's
 * addition included, decision by decision against the model, and no password in any log line.
 *
 * <p>The nodes' plain ports, on loopback, keep their default user for the harness (ACL SETUSER,
 * counting the logged sends); sendcap connects only to their TLS ports, as its ACL user.
 */
class RedisClusterSecurityIT {
  private static final String USER = "sendcap";
  private static final String PASSWORD = "pw-" + Long.toHexString(System.nanoTime()) + "-cluster";
  private static final String INPUT = "sends-secured-cluster";

  private static TestKafka kafka;
  private static EmbeddedRedisCluster cluster;
  private static Certificates certificates;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
    certificates = Certificates.create(dir);
    cluster = EmbeddedRedisCluster.startTls(3, 0, certificates);
    for (String rule :
        List.of(
            SecuredAccess.REDIS_ACL.replace("PASSWORD", PASSWORD),
            SecuredAccess.REDIS_CLUSTER_ACL)) {
      cluster.onEveryNode(rule.split(" "));
    }
    kafka.createTopics(
        4,
        INPUT,
        "deliveries-secured-cluster",
        "suppressed-secured-cluster",
        "dlq-secured-cluster");
  }

  @AfterAll
  static void stop() {
    if (cluster != null) {
      cluster.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  /** The settings of an application capping against the cluster's TLS ports as {@code user}. */
  private static Properties settings(String app, String user, String password) {
    String uris =
        cluster.tlsAddresses().stream()
            .map(a -> "rediss://" + user + ":" + password + "@" + a)
            .collect(Collectors.joining(","));
    Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), uris, app);
    p.setProperty("topic.input", INPUT);
    p.setProperty("cap.redis.cluster", "true");
    p.setProperty("cap.redis.ssl.truststore.location", certificates.truststore().toString());
    p.setProperty("cap.redis.ssl.truststore.password", certificates.password());
    return p;
  }

  @Test
  void aBlastIsCappedThroughATlsClusterAsTheReadmesUserWithNoPasswordShown() throws Exception {
    List<ProducerRecord<byte[], byte[]>> input = scenario.records(INPUT, 3_000, 400, 20, 30, 23);
    Properties p = settings("app-secured-cluster", USER, PASSWORD);
    CapturedLogs logs = new CapturedLogs();
    try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-secured-cluster"));
        TopicReader reader =
            new TopicReader(
                kafka.bootstrapServers(),
                "deliveries-secured-cluster",
                "suppressed-secured-cluster",
                "dlq-secured-cluster")) {
      List<CapScenario.Outcome> outcomes =
          scenario.assertBlastDecidedAsTheModel(
              kafka.bootstrapServers(),
              input,
              reader,
              "deliveries-secured-cluster",
              "suppressed-secured-cluster",
              p);
      assertThat(outcomes).anyMatch(o -> !o.allowed()).anyMatch(CapScenario.Outcome::allowed);
    } finally {
      logs.close();
    }
    // the sends are logged on every master, reached over TLS only
    for (String node : cluster.uris()) {
      assertThat(CapScenario.loggedSends(node)).as("sends logged on %s", node).isPositive();
    }
    List<String> lines = logs.lines();
    assertThat(lines).anyMatch(l -> l.contains("settings:")).noneMatch(l -> l.contains(PASSWORD));
    assertThat(lines).noneMatch(l -> l.contains("NOPERM"));
  }

  @Test
  void withoutTheClustersAdditionStartUpFailsInOneLineNamingTheCommand() {
    String user = "sendcap-standalone-rule";
    String password = PASSWORD + "-2";
    cluster.onEveryNode(
        SecuredAccess.REDIS_ACL
            .replace("SETUSER " + USER + " ", "SETUSER " + user + " ")
            .replace("PASSWORD", password)
            .split(" "));

    assertThatThrownBy(
            () ->
                SendcapApp.start(
                    CapScenario.config(
                        settings("app-no-cluster-acl", user, password), "-secured-cluster")))
        .isInstanceOf(SendcapApp.StartupException.class)
        .hasMessageContaining("Redis's ACL refuses sendcap's user a command or key it needs")
        .hasMessageContaining("'cluster|nodes'")
        .hasMessageContaining("README, \"Running against a secured Redis\"")
        .hasMessageNotContaining(password)
        .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
  }
}
