package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.avro.Channel;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRegistry;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.Decision;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.testing.TestKafka;
import io.sendcap.testing.TopicReader;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.streams.KafkaStreams;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * sendcap between two programs it does not own, written with a third-party Kafka client and
 * Confluent's own JavaScript serializers ({@code src/test/node}: {@code kafkajs} and {@code
 * @confluentinc/schemaregistry}) against a real Schema Registry (Apicurio's Confluent-compatible
 * API): a campaign engine that registers its ScheduledSend schema and produces a blast scheduled up
 * to days ahead with the producer's defaults (records stamped when produced), and a delivery
 * worker that reads {@code deliveries} and {@code suppressed} to their end and decodes them with
 * Confluent's deserializer. Every send must be decided once, as the reference model of the caps
 * decides it, with the campaign engine's fields intact.
 *
 * <p>Needs {@code node} on the PATH and the packages of {@code src/test/node} installed ({@code npm
 * ci} there, as {@code .ci/run} does); without them the test is skipped, saying why, except under
 * {@code CI=true}, where it fails.
 */
class ThirdPartyClientIT {
  private static final Logger LOG = LoggerFactory.getLogger(ThirdPartyClientIT.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path NODE_PROJECT = Path.of("src", "test", "node");
  private static final Path OUTPUT = Path.of("target", "third-party-client");
  private static final List<String> NODE_MODULES =
      List.of("kafkajs", "@confluentinc/schemaregistry");

  /**
   * The variables of this process's environment the Node scripts inherit: proxy settings, which the
   * registry client would honour for a loopback registry, are not among them.
   */
  private static final Set<String> INHERITED_ENVIRONMENT =
      Set.of("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR");

  private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);
  private static final int SENDS = 4_000;
  private static final int USERS = 200;
  private static final int DAYS = 3;
  private static final int SEED = 14;
  private static final String INPUT = "campaign-sends";
  private static final String DELIVERIES = "deliveries";
  private static final String SUPPRESSED = "suppressed";
  private static final String DLQ = "campaign-sends-dlq";

  private static Path node;
  private static String cannotRun;
  private static TestKafka kafka;
  private static EmbeddedRegistry registry;
  private static EmbeddedRedis redis;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    node = findNode();
    cannotRun = whyNodeCannotRun(node);
    if (cannotRun != null) {
      if ("true".equals(System.getenv("CI"))) {
        fail("ThirdPartyClientIT cannot run under CI: " + cannotRun);
      }
      System.out.println("ThirdPartyClientIT skipped: " + cannotRun);
      return;
    }
    // The registry is a child JVM: it starts while this one starts the broker.
    CompletableFuture<EmbeddedRegistry> registryStarting =
        CompletableFuture.supplyAsync(EmbeddedRegistry::start);
    try {
      kafka = TestKafka.start();
      kafka.createTopics(4, INPUT, DELIVERIES, SUPPRESSED, DLQ);
      redis = EmbeddedRedis.start();
    } finally {
      registry = registryStarting.join();
    }
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
    Files.createDirectories(OUTPUT);
  }

  @AfterAll
  static void stop() {
    if (registry != null) {
      registry.close();
    }
    if (redis != null) {
      redis.close();
    }
    if (kafka != null) {
      kafka.close();
    }
  }

  @Test
  void aNodeCampaignEngineAndDeliveryWorkerWithConfluentsSerializersSeeEverySendDecidedByTheCaps()
      throws IOException {
    Assumptions.assumeTrue(cannotRun == null, () -> "skipped: " + cannotRun);
    Properties settings =
        CapScenario.settings(dir, kafka.bootstrapServers(), redis.uri(), "sendcap-node-client");
    settings.setProperty("avro.serde", "confluent");
    settings.setProperty("schema.registry.url", registry.url());
    SendcapConfig config = CapScenario.config(settings, "");
    Path manifest = OUTPUT.resolve("campaign-engine-sends.jsonl");

    NodeRun engine;
    List<ConsumerRecord<byte[], byte[]>> decided;
    try (SendcapApp app = SendcapApp.start(config);
        TopicReader outputs =
            new TopicReader(kafka.bootstrapServers(), DELIVERIES, SUPPRESSED, DLQ)) {
      engine =
          runNode(
              "campaign-engine",
              "--bootstrap",
              kafka.bootstrapServers(),
              "--registry",
              registry.url(),
              "--topic",
              INPUT,
              "--count",
              Integer.toString(SENDS),
              "--users",
              Integer.toString(USERS),
              "--days",
              Integer.toString(DAYS),
              "--seed",
              Integer.toString(SEED),
              "--manifest",
              manifest.toAbsolutePath().toString());
      engine.log(Integer.MAX_VALUE);
      assertThat(engine.exitCode()).as("campaign engine's exit code").isZero();
      decided = outputs.awaitRecords(SENDS, Duration.ofMinutes(3));
      assertThat(app.state()).isEqualTo(KafkaStreams.State.RUNNING);
      LOG.info("sendcap decided {} sends; stopping it", decided.size());
    }

    // What the engine said and produced: its schema, registered under the topic's subject, and
    // records in the Confluent framing, stamped by the producer at the time it produced them.
    JsonNode registered = engine.event("schema");
    JsonNode produced = engine.event("produced");
    assertThat(registered.path("subject").asText()).isEqualTo(INPUT + "-value");
    int inputSchemaId = registered.path("id").asInt();
    assertThat(produced.path("schemaId").asInt()).isEqualTo(inputSchemaId);
    assertInputStampedAtProduceTime(produced, inputSchemaId);

    List<JsonNode> sends = readJsonLines(manifest);
    assertThat(sends).hasSize(SENDS);
    assertThat(sends.stream().mapToLong(s -> s.path("scheduledAt").asLong()).max().orElseThrow())
        .as("the latest send is scheduled days after the blast was produced")
        .isGreaterThan(
            Instant.parse(produced.path("producedTo").asText()).toEpochMilli()
                + Duration.ofDays(DAYS - 1).toMillis());
    assertThat(decided.stream().filter(r -> r.topic().equals(DLQ))).as("dead letters").isEmpty();

    // The delivery worker reads the outputs to their end, once sendcap has stopped.
    NodeRun worker =
        runNode(
            "delivery-worker",
            "--bootstrap",
            kafka.bootstrapServers(),
            "--registry",
            registry.url(),
            "--topics",
            DELIVERIES + "," + SUPPRESSED);
    Files.write(OUTPUT.resolve("delivery-worker.jsonl"), worker.stdout());
    worker.log(4);
    assertThat(worker.exitCode()).as("delivery worker's exit code").isZero();
    JsonNode end = worker.event("end");
    assertThat(end.path("reachedEnd").asBoolean()).as("reached the end offsets").isTrue();
    assertThat(end.path("errors").asInt()).as("records it could not decode").isZero();
    List<JsonNode> read = worker.records();
    LOG.info("delivery worker's outcomes: {}", summary(read));

    Map<String, List<JsonNode>> byId =
        read.stream()
            .collect(
                Collectors.groupingBy(
                    r -> r.path("messageId").asText(), TreeMap::new, Collectors.toList()));
    Map<String, JsonNode> sent =
        sends.stream()
            .collect(
                Collectors.toMap(
                    s -> s.path("messageId").asText(),
                    Function.identity(),
                    (a, b) -> a,
                    TreeMap::new));
    assertThat(byId.keySet()).as("the sends decided").isEqualTo(sent.keySet());
    assertThat(byId.values().stream().filter(outcomes -> outcomes.size() != 1))
        .as("sends decided more than once")
        .isEmpty();

    Map<String, String> expected = modelDecisions(sends, config);
    Map<String, String> actual = new TreeMap<>();
    for (JsonNode r : read) {
      String id = r.path("messageId").asText();
      actual.put(id, describe(r));
      JsonNode send = sent.get(id);
      assertThat(sendFields(r)).as("the send's fields of %s", id).isEqualTo(send);
      long user = send.path("userId").asLong();
      assertThat(r.path("segment").asText())
          .as("segment of user %d", user)
          .isEqualTo(user <= CapScenario.VIPS ? "vip" : Policy.DEFAULT);
      assertThat(r.path("decidedAt").asLong())
          .as("decidedAt of %s under the event clock", id)
          .isEqualTo(send.path("scheduledAt").asLong());
      assertThat(r.path("failOpen").asBoolean(false) || r.path("shadow").asBoolean(false))
          .isFalse();
    }
    Map<String, String> differences = new TreeMap<>();
    expected.forEach(
        (id, decision) -> {
          if (!decision.equals(actual.get(id))) {
            differences.put(id, "model: " + decision + ", sendcap: " + actual.get(id));
          }
        });
    assertThat(differences)
        .as("decisions other than the reference model's, of %d", expected.size())
        .isEmpty();
    assertThat(actual.values().stream().map(d -> d.split(" ")[0]).collect(Collectors.toSet()))
        .as("the blast meets every rule")
        .contains("allowed", "CAP", "MIN_INTERVAL");

    // One writer schema per output, sendcap's, registered under <topic>-value: not the input's.
    Map<String, Set<Integer>> schemaIds =
        read.stream()
            .collect(
                Collectors.groupingBy(
                    r -> r.path("topic").asText(),
                    TreeMap::new,
                    Collectors.mapping(r -> r.path("schemaId").asInt(), Collectors.toSet())));
    assertThat(schemaIds.keySet()).containsExactly(DELIVERIES, SUPPRESSED);
    schemaIds.values().forEach(ids -> assertThat(ids).hasSize(1).doesNotContain(inputSchemaId));
    assertThat(schemaIds.get(DELIVERIES)).doesNotContainAnyElementsOf(schemaIds.get(SUPPRESSED));
  }

  /**
   * Checks that the input records are those the engine announced: in the Confluent framing with its
   * schema id, each stamped by the producer within the time it was producing.
   */
  private void assertInputStampedAtProduceTime(JsonNode produced, int schemaId) {
    long from = Instant.parse(produced.path("producedFrom").asText()).toEpochMilli();
    long to = Instant.parse(produced.path("producedTo").asText()).toEpochMilli();
    List<ConsumerRecord<byte[], byte[]>> input;
    try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), INPUT)) {
      input = reader.readToEnd(Duration.ofMinutes(1));
    }
    assertThat(input).hasSize(SENDS);
    for (ConsumerRecord<byte[], byte[]> r : input) {
      ByteBuffer value = ByteBuffer.wrap(r.value());
      assertThat(value.get()).as("magic byte").isZero();
      assertThat(value.getInt()).as("schema id").isEqualTo(schemaId);
      assertThat(r.timestamp()).as("record timestamp").isBetween(from, to);
      assertThat(new String(r.key(), StandardCharsets.UTF_8)).matches("[0-9]+");
    }
    LOG.info(
        "campaign engine's {} records: Confluent framing, schema id {}, stamped {} to {} by the"
            + " producer",
        input.size(),
        schemaId,
        Instant.ofEpochMilli(from),
        Instant.ofEpochMilli(to));
  }

  /**
   * Each send's decision by the reference model, in the order the engine produced them (a user's
   * sends are in one partition, in that order). sendcap's time floor is at most the stream time
   * (when the blast was produced) less {@code cap.max-skew.ms}, a week, so it evicts no log entry
   * of this blast, all scheduled after that: neither does the model, with a floor of 0.
   */
  private Map<String, String> modelDecisions(List<JsonNode> sends, SendcapConfig config) {
    SlidingLogModel model = new SlidingLogModel(config.limiter().idempotencyRetention());
    Map<String, String> expected = new TreeMap<>();
    for (JsonNode s : sends) {
      String id = s.path("messageId").asText();
      long user = s.path("userId").asLong();
      if (s.path("transactional").asBoolean()) {
        expected.put(id, "allowed");
        continue;
      }
      Policy policy =
          user <= CapScenario.VIPS
              ? scenario.policies.segments().get(0)
              : scenario.policies.defaultPolicy();
      JsonNode zone = s.path("userTimeZone");
      Decision d =
          model.decide(
              new CapRequest(
                  user,
                  id,
                  s.path("scheduledAt").asLong(),
                  policy,
                  Channel.valueOf(s.path("channel").asText()),
                  zone.isNull() ? null : ZoneId.of(zone.asText()),
                  0L,
                  false));
      expected.put(
          id,
          switch (d.outcome()) {
            case ALLOWED, DUPLICATE -> "allowed";
            case CAPPED ->
                "CAP "
                    + policy.caps().get(d.capIndex()).name()
                    + " "
                    + d.count()
                    + " "
                    + d.nextEligibleAt();
            case MIN_INTERVAL -> "MIN_INTERVAL null null " + d.nextEligibleAt();
            case NOT_A_REPLAY -> throw new IllegalStateException("the model was asked a probe");
          });
    }
    return expected;
  }

  /** A decision as the delivery worker printed it, in the form of {@link #modelDecisions}. */
  private static String describe(JsonNode r) {
    if (r.path("outcome").asText().equals("allowed")) {
      return "allowed";
    }
    return r.path("reason").asText()
        + " "
        + text(r.path("capWindow"))
        + " "
        + text(r.path("capCount"))
        + " "
        + text(r.path("nextEligibleAt"));
  }

  private static String text(JsonNode node) {
    return node.isNull() || node.isMissingNode() ? "null" : node.asText();
  }

  /** The fields of the send a delivery worker's line carries, as the engine's manifest has them. */
  private static JsonNode sendFields(JsonNode r) {
    Map<String, JsonNode> fields = new LinkedHashMap<>();
    for (String name :
        List.of(
            "messageId",
            "campaignId",
            "userId",
            "channel",
            "scheduledAt",
            "transactional",
            "userTimeZone",
            "attributes")) {
      fields.put(name, r.path(name));
    }
    return JSON.valueToTree(fields);
  }

  private static String summary(List<JsonNode> read) {
    return read.stream()
        .collect(
            Collectors.groupingBy(
                r -> r.path("outcome").asText().equals("allowed") ? "allowed" : describeShort(r),
                TreeMap::new,
                Collectors.counting()))
        .toString();
  }

  private static String describeShort(JsonNode r) {
    return r.path("reason").asText()
        + (r.path("capWindow").isNull() ? "" : " " + r.path("capWindow").asText());
  }

  /** What a Node script printed: JSON lines on its standard output, anything on its error. */
  private record NodeRun(
      String script, int exitCode, List<String> stdout, String stderr, Duration took) {
    /** The summary line of the given {@code event}. */
    JsonNode event(String event) {
      return lines().stream()
          .filter(l -> l.path("event").asText().equals(event))
          .findFirst()
          .orElseThrow(() -> new AssertionError(script + " printed no \"" + event + "\" line"));
    }

    /** The lines that are records, not events. */
    List<JsonNode> records() {
      return lines().stream().filter(l -> !l.has("event")).toList();
    }

    List<JsonNode> lines() {
      List<JsonNode> lines = new ArrayList<>();
      for (String line : stdout) {
        try {
          lines.add(JSON.readTree(line));
        } catch (IOException e) {
          throw new AssertionError(script + " printed a line that is not JSON: " + line, e);
        }
      }
      return lines;
    }

    /** Logs the output: all of it, or the first and last {@code edge} lines of a long one. */
    void log(int edge) {
      LOG.info(
          "node {}.js exited with {} after {} ms; {} lines of output:",
          script,
          exitCode,
          took.toMillis(),
          stdout.size());
      for (int i = 0; i < stdout.size(); i++) {
        if (i < edge || i >= stdout.size() - edge) {
          LOG.info("  {}", stdout.get(i));
        } else if (i == edge) {
          LOG.info("  ... ({} lines)", stdout.size() - 2 * edge);
        }
      }
      if (!stderr.isBlank()) {
        LOG.info("{}.js on its standard error:\n{}", script, stderr.strip());
      }
    }
  }

  /**
   * Runs {@code src/test/node/<script>.js} with {@code node}, waiting for it to exit (killing it
   * after {@link #SCRIPT_TIMEOUT}).
   */
  private static NodeRun runNode(String script, String... args) throws IOException {
    List<String> command = new ArrayList<>(List.of(node.toString(), script + ".js"));
    command.addAll(List.of(args));
    Path out = Files.createTempFile(dir, script, ".out");
    Path err = Files.createTempFile(dir, script, ".err");
    ProcessBuilder builder =
        new ProcessBuilder(command)
            .directory(NODE_PROJECT.toFile())
            .redirectOutput(out.toFile())
            .redirectError(err.toFile());
    builder.environment().keySet().retainAll(INHERITED_ENVIRONMENT);
    long started = System.nanoTime();
    Process process = builder.start();
    LOG.info("running node {}.js (pid {})", script, process.pid());
    try {
      if (!process.waitFor(SCRIPT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly().waitFor();
        fail(
            "node %s.js did not exit within %s; it printed:%n%s%n%s",
            script, SCRIPT_TIMEOUT, Files.readString(out), Files.readString(err));
      }
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while node " + script + ".js ran", e);
    }
    return new NodeRun(
        script,
        process.exitValue(),
        Files.readAllLines(out, StandardCharsets.UTF_8).stream().filter(l -> !l.isBlank()).toList(),
        Files.readString(err, StandardCharsets.UTF_8),
        Duration.ofNanos(System.nanoTime() - started));
  }

  private static List<JsonNode> readJsonLines(Path file) {
    try {
      List<JsonNode> nodes = new ArrayList<>();
      for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
        if (!line.isBlank()) {
          nodes.add(JSON.readTree(line));
        }
      }
      return nodes;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Returns {@code node} from the PATH, or null if it is not there. */
  private static Path findNode() {
    for (String entry : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
      Path candidate = Path.of(entry.isEmpty() ? "." : entry, "node");
      if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
        return candidate.toAbsolutePath();
      }
    }
    return null;
  }

  /**
   * Why the Node scripts cannot run: {@code node} is not on the PATH, or the packages of {@code
   * src/test/node} are not installed; null if they can.
   */
  private static String whyNodeCannotRun(Path node) {
    if (node == null) {
      return "node is not on the PATH (install Node.js 20 or later)";
    }
    List<String> absent =
        NODE_MODULES.stream()
            .filter(m -> !Files.isDirectory(NODE_PROJECT.resolve("node_modules").resolve(m)))
            .toList();
    if (!absent.isEmpty()) {
      return "the Node packages "
          + absent
          + " are not installed in "
          + NODE_PROJECT
          + " (run `npm ci` there, as .ci/run does)";
    }
    return null;
  }
}
