package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.avro.Channel;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.reference.ReferenceCaps;
import io.sendcap.testing.Docker;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * docker-compose.yml as a user runs it: {@code docker-compose up -d} with the images docker/build
 * makes, {@code /health/ready} awaited on the published port, a blast produced from the host with
 * {@code bin/sendcap produce} in the Confluent wire format the compose file configures, the outputs
 * read back with {@code bin/sendcap consume}, and {@code docker-compose down -v} at the end.
 *
 * <p>The blast goes to users in no segment of config/policies.yaml (the default policy: 2 a day, 5
 * a week, 1 SMS a week); sendcap runs with the wall clock of the file, so each send is checked
 * against the reference model at the time its output says it was decided.
 */
class ComposeIT {
  private static final Duration UP_TIMEOUT = Duration.ofMinutes(6);
  private static final Duration DECIDED_TIMEOUT = Duration.ofMinutes(3);
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(2);
  private static final int SENDS = 3_000;
  private static final int USERS = 400;

  /** Above every id in config/segments/, so every user of the blast gets the default policy. */
  private static final long FIRST_USER = 100_000;

  private final ObjectMapper json = new ObjectMapper();

  @Test
  void composeUpGivesASendcapThatCapsABlastProducedFromTheHost(@TempDir Path dir) throws Exception {
    Docker.Images images = Docker.images();
    List<String> compose = Docker.compose();
    Map<String, String> env = new LinkedHashMap<>(images.variables());
    for (String port : List.of("KAFKA_PORT", "REDIS_PORT", "REGISTRY_PORT", "HTTP_PORT")) {
      env.put(port, Integer.toString(freePort()));
    }
    String project = "sendcap-it-" + ProcessHandle.current().pid();
    List<String> base = new ArrayList<>(compose);
    base.addAll(List.of("--project-name", project, "--file", "docker-compose.yml"));

    try {
      Docker.Result up = compose(base, env, "up", List.of("up", "-d"), UP_TIMEOUT);
      assertThat(up.exit()).as("docker-compose up:\n%s", logs(base, env)).isZero();
      awaitReady(Integer.parseInt(env.get("HTTP_PORT")), base, env);

      List<String> hostSettings =
          List.of(
              "--set",
              "bootstrap.servers=localhost:" + env.get("KAFKA_PORT"),
              "--set",
              "avro.serde=confluent",
              "--set",
              "schema.registry.url=http://localhost:"
                  + env.get("REGISTRY_PORT")
                  + "/apis/ccompat/v7");
      List<Map<String, Object>> blast = blast(Instant.now());
      Path file = dir.resolve("blast.jsonl");
      Files.write(file, blast.stream().map(this::line).toList());
      Docker.Result produced =
          sendcap(hostSettings, "produce", "--topic", "campaign-sends", "--file", file.toString());
      assertThat(produced.exit()).as(produced.output()).isZero();

      Map<String, List<JsonNode>> outputs = new TreeMap<>();
      TopicReader.await(
          "every send of the blast decided",
          DECIDED_TIMEOUT,
          () -> {
            outputs.clear();
            for (String topic : List.of("deliveries", "suppressed")) {
              outputs.put(topic, consume(hostSettings, topic));
            }
            return outputs.values().stream().mapToInt(List::size).sum() >= blast.size();
          });

      assertEachSendDecidedOnce(blast, outputs);
      assertDecisionsAreTheModels(blast, outputs);
      assertThat(outputs.get("suppressed")).isNotEmpty();
      assertThat(consume(hostSettings, "campaign-sends-dlq")).isEmpty();
    } finally {
      Docker.Result down =
          compose(base, env, "down", List.of("down", "-v", "--remove-orphans"), UP_TIMEOUT);
      assertThat(down.exit()).as("docker-compose down:\n%s", down.output()).isZero();
    }
  }

  /**
   * The blast: sends to {@link #USERS} users over every channel, scheduled now, a few
   * transactional, as JSON objects of ScheduledSend's fields.
   */
  private static List<Map<String, Object>> blast(Instant now) {
    SplittableRandom random = new SplittableRandom(42);
    List<Map<String, Object>> sends = new ArrayList<>();
    for (int i = 0; i < SENDS; i++) {
      Map<String, Object> send = new LinkedHashMap<>();
      send.put("messageId", "compose-" + i);
      send.put("campaignId", "c" + (i % 5));
      send.put("userId", FIRST_USER + random.nextInt(USERS));
      send.put("channel", Channel.values()[random.nextInt(Channel.values().length)].name());
      send.put("scheduledAt", now.toString());
      send.put("transactional", random.nextInt(50) == 0);
      sends.add(send);
    }
    return sends;
  }

  private String line(Map<String, Object> send) {
    try {
      return json.writeValueAsString(send);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void assertEachSendDecidedOnce(
      List<Map<String, Object>> blast, Map<String, List<JsonNode>> outputs) {
    Map<String, Long> decided =
        outputs.values().stream()
            .flatMap(List::stream)
            .collect(
                Collectors.groupingBy(
                    o -> o.path("send").path("messageId").asText(),
                    TreeMap::new,
                    Collectors.counting()));
    Map<String, Long> notOnce = new TreeMap<>();
    blast.forEach(s -> notOnce.put((String) s.get("messageId"), 0L));
    decided.forEach((id, times) -> notOnce.merge(id, times, Long::sum));
    notOnce.values().removeIf(times -> times == 1);
    assertThat(notOnce)
        .as("sends of the blast not in deliveries or suppressed exactly once (id=times)")
        .isEmpty();
  }

  /**
   * Each user's sends in the order produced (one user's sends are on one partition, decided in
   * order), each decided by the reference model at its output's decidedAt, with the default policy
   * of the image's config/policies.yaml.
   */
  private static void assertDecisionsAreTheModels(
      List<Map<String, Object>> blast, Map<String, List<JsonNode>> outputs) {
    Policy policy = Policies.load(Path.of("config/policies.yaml")).defaultPolicy();
    Map<String, JsonNode> byId = new HashMap<>();
    Map<String, Boolean> allowed = new TreeMap<>();
    outputs.forEach(
        (topic, records) ->
            records.forEach(
                r -> {
                  String id = r.path("send").path("messageId").asText();
                  byId.put(id, r);
                  allowed.put(id, topic.equals("deliveries"));
                }));
    ReferenceCaps model = new ReferenceCaps();
    Map<String, Boolean> expected = new TreeMap<>();
    for (Map<String, Object> s : blast) {
      String id = (String) s.get("messageId");
      JsonNode decided = byId.get(id).path("decidedAt");
      long at =
          decided.isNumber() ? decided.asLong() : Instant.parse(decided.asText()).toEpochMilli();
      ReferenceCaps.Verdict verdict =
          model.decide(
              new ReferenceCaps.Send(
                  (Long) s.get("userId"),
                  id,
                  Channel.valueOf((String) s.get("channel")),
                  at,
                  (Boolean) s.get("transactional"),
                  null),
              policy);
      expected.put(id, verdict.allowed());
    }
    Map<String, String> differences = new TreeMap<>();
    expected.forEach(
        (id, allow) -> {
          if (!allow.equals(allowed.get(id))) {
            differences.put(id, "model " + allow + ", sendcap " + allowed.get(id));
          }
        });
    assertThat(differences)
        .as("allowed, send by send, against the model (%d sends)", expected.size())
        .isEmpty();
    System.out.printf(
        "ComposeIT: %d sends, %d delivered, %d suppressed, as the model says%n",
        expected.size(), outputs.get("deliveries").size(), outputs.get("suppressed").size());
  }

  /** Runs a sendcap command on the host, as a user runs it: bin/sendcap. */
  private static Docker.Result sendcap(List<String> settings, String command, String... args) {
    List<String> line = new ArrayList<>(List.of("bin/sendcap", command));
    line.addAll(List.of(args));
    line.addAll(settings);
    return Docker.run(TOOL_TIMEOUT, Map.of(), null, line.toArray(String[]::new));
  }

  /** The records of a topic, read to its end with bin/sendcap consume --json. */
  private List<JsonNode> consume(List<String> settings, String topic) {
    List<String> line = new ArrayList<>(List.of("bin/sendcap", "consume"));
    line.addAll(settings);
    line.addAll(List.of("--topic", topic, "--from-beginning", "--until-end", "--json"));
    Docker.Result r = Docker.run(TOOL_TIMEOUT, Map.of(), null, line.toArray(String[]::new));
    assertThat(r.exit()).as(r.output()).isZero();
    List<JsonNode> records = new ArrayList<>();
    for (String l : r.output().split("\n")) {
      if (l.startsWith("{")) {
        try {
          records.add(json.readTree(l));
        } catch (IOException e) {
          throw new UncheckedIOException("consume printed a line that is not JSON: " + l, e);
        }
      }
    }
    return records;
  }

  private static void awaitReady(int port, List<String> base, Map<String, String> env) {
    HttpClient http = HttpClient.newHttpClient();
    HttpRequest ready =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/health/ready"))
            .timeout(Duration.ofSeconds(5))
            .build();
    try {
      TopicReader.await(
          "sendcap's /health/ready to answer 200 on port " + port,
          UP_TIMEOUT,
          () -> {
            try {
              return http.send(ready, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (IOException notYet) {
              return false;
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new IllegalStateException(e);
            }
          });
    } catch (AssertionError e) {
      throw new AssertionError(e.getMessage() + "\n" + logs(base, env), e);
    }
  }

  private static Docker.Result compose(
      List<String> base, Map<String, String> env, String log, List<String> args, Duration timeout) {
    List<String> line = new ArrayList<>(base);
    line.addAll(args);
    return Docker.run(timeout, env, Docker.log("compose-" + log), line.toArray(String[]::new));
  }

  private static String logs(List<String> base, Map<String, String> env) {
    List<String> line = new ArrayList<>(base);
    line.addAll(List.of("logs", "--no-color", "--tail", "40"));
    return Docker.tail(
        Docker.run(Duration.ofMinutes(1), env, null, line.toArray(String[]::new)).output());
  }

  private static int freePort() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
