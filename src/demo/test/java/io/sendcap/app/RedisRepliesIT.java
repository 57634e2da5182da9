package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRedisCluster;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Redis answers besides decisions, through the whole application on a real broker and a real
 * Redis: a key of one user that another application wrote costs that user's sends (to the
 * dead-letter topic, with the reason), not the partition; an ACL that refuses sendcap a command it
 * needs pauses the work and turns {@code /health/ready} red with the reason, not a silent stall.
 */
class RedisRepliesIT {
  private static final Duration TIMEOUT = Duration.ofMinutes(1);
  private static final HttpClient HTTP = HttpClient.newHttpClient();

  private static TestKafka kafka;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  @Test
  void aForeignKeyCostsItsUsersSendsAndEveryOtherSendIsDecidedAsTheModelSays() throws IOException {
    long foreign = 7;
    kafka.createTopics(2, "sends-key", "deliveries-key", "suppressed-key", "dlq-key");
    List<ProducerRecord<byte[], byte[]>> input = scenario.records("sends-key", 1_500, 40, 0, 0, 49);
    Set<String> foreignIds =
        scenario.sendsOf(input).stream()
            .filter(s -> s.getUserId() == foreign && !s.getTransactional())
            .map(ScheduledSend::getMessageId)
            .collect(Collectors.toSet());
    assertThat(foreignIds).isNotEmpty();
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      redis.call("SET", "s{" + foreign + "}", "written by another application");
      Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "app-key");
      p.setProperty("topic.input", "sends-key");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-key"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(), "deliveries-key", "suppressed-key", "dlq-key")) {
        CapScenario.produce(kafka.bootstrapServers(), input);
        List<ConsumerRecord<byte[], byte[]>> outputs = reader.awaitRecords(input.size(), TIMEOUT);
        List<CapScenario.Outcome> all =
            scenario.outcomes(outputs, "deliveries-key", "suppressed-key");

        scenario.assertEachInputOnce(input, all);
        List<ConsumerRecord<byte[], byte[]>> dead =
            outputs.stream().filter(r -> r.topic().equals("dlq-key")).toList();
        assertThat(dead)
            .extracting(r -> scenario.idOf(r.value()))
            .containsExactlyInAnyOrderElementsOf(foreignIds);
        assertThat(dead)
            .allSatisfy(
                r ->
                    assertThat(header(r, "__streams.errors.message"))
                        .startsWith("Redis cannot use the key of user " + foreign)
                        .contains("WRONGTYPE"));
        List<ScheduledSend> decidable =
            scenario.sendsOf(input).stream()
                .filter(s -> !foreignIds.contains(s.getMessageId()))
                .toList();
        scenario.assertDecisionsMatchTheModel(decidable, all, Duration.ofDays(1));
        assertThat(
                app.metrics()
                    .get("sendcap.sends.dead.letters")
                    .tag("reason", "redis-key")
                    .counter()
                    .count())
            .isEqualTo(foreignIds.size());
        assertThat(app.metrics().get("sendcap.limiter.outages").counter().count())
            .as("a foreign key is no outage")
            .isZero();
        assertThat(redis.call("GET", "s{" + foreign + "}"))
            .as("the foreign key, untouched")
            .contains("written by another application");
      }
    }
  }

  @Test
  void anAclThatRefusesEvalshaPausesTheWorkAndHealthSaysWhyUntilItIsGrantedAgain()
      throws IOException {
    kafka.createTopics(2, "sends-acl", "deliveries-acl", "suppressed-acl", "dlq-acl");
    List<ProducerRecord<byte[], byte[]>> input = scenario.records("sends-acl", 600, 40, 0, 0, 50);
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      redis.call("ACL", "SETUSER", "sendcap", "on", ">pw", "~*", "+@all");
      String uri = "redis://sendcap:pw@127.0.0.1:" + redis.port();
      Properties p = CapScenario.settings(dir, kafka.bootstrapServers(), uri, "app-acl");
      p.setProperty("topic.input", "sends-acl");
      try (SendcapApp app = SendcapApp.start(CapScenario.config(p, "-acl"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(), "deliveries-acl", "suppressed-acl", "dlq-acl")) {
        int port = app.httpPort();
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, 200));
        reader.awaitRecords(200, TIMEOUT);
        assertThat(ready(port).statusCode()).isEqualTo(200);

        redis.call("ACL", "SETUSER", "sendcap", "-evalsha");
        CapScenario.produce(kafka.bootstrapServers(), input.subList(200, 400));
        TopicReader.await("readiness to turn red", TIMEOUT, () -> ready(port).statusCode() == 503);
        assertThat(ready(port).body())
            .contains("Redis refuses sendcap's calls")
            .contains("NOPERM")
            .contains("evalsha");
        assertThat(app.metrics().get("sendcap.limiter.refused").gauge().value()).isEqualTo(1.0);
        int atRefusal = AppProgress.awaitOutputsCommitted(app.metrics(), reader, TIMEOUT).size();
        AppProgress.awaitStreamThreadRounds(app.metrics(), 30, TIMEOUT);
        assertThat(AppProgress.awaitOutputsCommitted(app.metrics(), reader, TIMEOUT).size())
            .as("outputs after the application ran on with the ACL refusing EVALSHA")
            .isEqualTo(atRefusal);
        assertThat(ready(port).statusCode()).as("still refused").isEqualTo(503);

        redis.call("ACL", "SETUSER", "sendcap", "+evalsha");
        CapScenario.produce(kafka.bootstrapServers(), input.subList(400, input.size()));
        List<CapScenario.Outcome> all =
            scenario.outcomes(
                reader.awaitRecords(input.size(), TIMEOUT), "deliveries-acl", "suppressed-acl");
        TopicReader.await(
            "readiness once Redis accepts the calls",
            TIMEOUT,
            () -> ready(port).statusCode() == 200);

        scenario.assertEachInputOnce(input, all);
        scenario.assertDecisionsMatchTheModel(scenario.sendsOf(input), all, Duration.ofDays(1));
        assertThat(app.metrics().get("sendcap.limiter.refused").gauge().value()).isZero();
      }
    }
  }

  /**
   * Under {@code cap.redis.failure-mode=allow}, one master of a cluster out of memory: only the
   * sends of its users are delivered fail-open; every send the other masters decided in the same
   * batches is delivered or suppressed as they decided it, as the model says.
   */
  @Test
  void underAllowOneRefusingNodeCostsOnlyItsUsersAndTheOthersAreDecidedAsTheModelSays() {
    kafka.createTopics(2, "sends-oom", "deliveries-oom", "suppressed-oom", "dlq-oom");
    List<ProducerRecord<byte[], byte[]>> input = scenario.records("sends-oom", 1_200, 40, 0, 0, 51);
    int first = 400;
    try (EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start()) {
      Properties p =
          CapScenario.settings(
              dir, kafka.bootstrapServers(), String.join(",", cluster.uris()), "app-oom");
      p.setProperty("topic.input", "sends-oom");
      p.setProperty("cap.redis.cluster", "true");
      p.setProperty("cap.redis.failure-mode", "allow");
      RedisClient client = RedisClient.create(cluster.uris().get(2));
      try (StatefulRedisConnection<String, String> refusing = client.connect();
          SendcapApp app = SendcapApp.start(CapScenario.config(p, "-oom"));
          TopicReader reader =
              new TopicReader(
                  kafka.bootstrapServers(), "deliveries-oom", "suppressed-oom", "dlq-oom")) {
        CapScenario.produce(kafka.bootstrapServers(), input.subList(0, first));
        reader.awaitRecords(first, TIMEOUT);
        Set<Long> refused = usersWithKeys(cluster.uris().get(2));
        Set<Long> decided = usersWithKeys(cluster.uris().get(0));
        decided.addAll(usersWithKeys(cluster.uris().get(1)));
        assertThat(refused).isNotEmpty();
        assertThat(decided).isNotEmpty();

        refusing.sync().configSet("maxmemory", "1");
        CapScenario.produce(kafka.bootstrapServers(), input.subList(first, input.size()));
        List<CapScenario.Outcome> all =
            scenario.outcomes(
                reader.awaitRecords(input.size(), TIMEOUT), "deliveries-oom", "suppressed-oom");

        scenario.assertEachInputOnce(input, all);
        Map<String, Long> userOf =
            scenario.sendsOf(input).stream()
                .collect(
                    Collectors.toMap(
                        ScheduledSend::getMessageId, ScheduledSend::getUserId, (a, b) -> a));
        Set<String> secondPart =
            scenario.sendsOf(input.subList(first, input.size())).stream()
                .filter(s -> !s.getTransactional() && refused.contains(s.getUserId()))
                .map(ScheduledSend::getMessageId)
                .collect(Collectors.toSet());
        assertThat(all)
            .filteredOn(o -> secondPart.contains(o.messageId()))
            .as("the refusing node's users' sends, after it ran out of memory")
            .isNotEmpty()
            .allSatisfy(o -> assertThat(((Delivery) o.detail()).getFailOpen()).isTrue());
        assertThat(all)
            .filteredOn(o -> decided.contains(userOf.get(o.messageId())))
            .as("the other nodes' users' sends")
            .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen());
        List<ScheduledSend> decidable =
            scenario.sendsOf(input).stream().filter(s -> decided.contains(s.getUserId())).toList();
        scenario.assertDecisionsMatchTheModel(
            decidable,
            all.stream().filter(o -> decided.contains(userOf.get(o.messageId()))).toList(),
            Duration.ofDays(1));
      } finally {
        client.shutdown();
      }
    }
  }

  /** The users whose keys ({@code s{TAG}USERID}) are on the node at {@code uri}. */
  private static Set<Long> usersWithKeys(String uri) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys("s{*}*").stream()
          .map(k -> Long.parseLong(k.substring(k.indexOf('}') + 1)))
          .collect(Collectors.toCollection(HashSet::new));
    } finally {
      client.shutdown();
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static HttpResponse<String> ready(int port) {
    try {
      return HTTP.send(
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready")).build(),
          HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}
