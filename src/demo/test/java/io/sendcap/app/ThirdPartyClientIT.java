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
 * sendcap between two programs it does not own, written with third-party Kafka clients and
 * Confluent's own serializers against a real Schema Registry (Apicurio's Confluent-compatible API):
 * a campaign engine that registers its ScheduledSend schema and produces a blast scheduled up to
 * days ahead with the producer's defaults (records stamped when produced), and a delivery worker
 * that reads {@code deliveries} and {@code suppressed} to their end and decodes them with
 * Confluent's deserializer. Every send must be decided once, as the reference model of the caps
 * decides it, with the campaign engine's fields intact.
 *
 * <p>Two such pairs: in Node.js ({@code src/demo/test/node}: {@code kafkajs} and {@code
 * @confluentinc/schemaregistry}, from the npm registry), and in Python ({@code src/demo/test/python}:
 * Debian's {@code python3-confluent-kafka} with {@code python3-avro}). Each needs its runtime and
 * packages ({@code .ci/run} installs them); without them its test is skipped, saying why, except
 * under {@code CI=true}, where it fails.
 */
class ThirdPartyClientIT {
  private static final Logger LOG = LoggerFactory.getLogger(ThirdPartyClientIT.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Path OUTPUT = Path.of("target", "third-party-client");

  /**
   * The variables of this process's environment the scripts inherit: proxy settings, which the
   * registry clients would honour for a loopback registry, are not among them.
   */
  private static final Set<String> INHERITED_ENVIRONMENT =
      Set.of("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR");

  private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);
  private static final int SENDS = 4_000;
  private static final int USERS = 200;
  private static final int DAYS = 3;
  private static final int SEED = 14;

  private static Client node;
  private static Client python;
  private static TestKafka kafka;
  private static EmbeddedRegistry registry;
  @TempDir static Path dir;

  private final CapScenario scenario = new CapScenario();

  @BeforeAll
  static void start() throws IOException {
    node = Client.node();
    python = Client.python();
    if (node.cannotRun() != null && python.cannotRun() != null && !underCi()) {
      return;
    }
    // The registry is a child JVM: it starts while this one starts the broker.
    CompletableFuture<EmbeddedRegistry> registryStarting =
        CompletableFuture.supplyAsync(EmbeddedRegistry::start);
    try {
      kafka = TestKafka.start();
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
    if (kafka != null) {
      kafka.close();
    }
  }

  @Test
  void aNodeCampaignEngineAndDeliveryWorkerWithConfluentsSerializersSeeEverySendDecidedByTheCaps()
      throws IOException {
    checkDecidedAsTheModelSays(node);
  }

  @Test
  void aPythonCampaignEngineAndDeliveryWorkerWithConfluentsSerializersSeeEverySendDecidedByTheCaps()
      throws IOException {
    checkDecidedAsTheModelSays(python);
  }

  /**
   * Runs the client's campaign engine into sendcap, then its delivery worker, on topics of their
   * own ({@code campaign-sends-node}, {@code deliveries-node}, ...) and a Redis of their own, and
   * checks what the worker read.
   */
  private void checkDecidedAsTheModelSays(Client client) throws IOException {
    if (client.cannotRun() != null) {
      if (underCi()) {
        fail(
            "ThirdPartyClientIT cannot run the %s clients under CI: %s",
            client, client.cannotRun());
      }
      System.out.printf(
          "ThirdPartyClientIT: the %s clients skipped: %s%n", client, client.cannotRun());
      Assumptions.abort(client.cannotRun());
    }
    String input = "campaign-sends-" + client.name();
    String deliveries = "deliveries-" + client.name();
    String suppressed = "suppressed-" + client.name();
    String dlq = input + "-dlq";
    kafka.createTopics(4, input, deliveries, suppressed, dlq);
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      Properties settings =
          CapScenario.settings(
              dir, kafka.bootstrapServers(), redis.uri(), "sendcap-" + client.name());
      settings.setProperty("avro.serde", "confluent");
      settings.setProperty("schema.registry.url", registry.url());
      settings.setProperty("topic.input", input);
      settings.setProperty("topic.deliveries", deliveries);
      settings.setProperty("topic.suppressed", suppressed);
      settings.setProperty("topic.dlq", dlq);
      SendcapConfig config = CapScenario.config(settings, "");
      check(client, config);
    }
  }

  private void check(Client client, SendcapConfig config) throws IOException {
    String input = config.topics().input();
    String deliveries = config.topics().deliveries();
    String suppressed = config.topics().suppressed();
    String dlq = config.topics().deadLetters();
    Path manifest = OUTPUT.resolve(client.name() + "-campaign-engine-sends.jsonl");

    ScriptRun engine;
    List<ConsumerRecord<byte[], byte[]>> decided;
    try (SendcapApp app = SendcapApp.start(config);
        TopicReader outputs =
            new TopicReader(kafka.bootstrapServers(), deliveries, suppressed, dlq)) {
      engine =
          client.run(
              Client.Script.CAMPAIGN_ENGINE,
              "--bootstrap",
              kafka.bootstrapServers(),
              "--registry",
              registry.url(),
              "--topic",
              input,
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
    assertThat(registered.path("subject").asText()).isEqualTo(input + "-value");
    int inputSchemaId = registered.path("id").asInt();
    assertThat(produced.path("schemaId").asInt()).isEqualTo(inputSchemaId);
    assertInputStampedAtProduceTime(input, produced, inputSchemaId);

    List<JsonNode> sends = readJsonLines(manifest);
    assertThat(sends).hasSize(SENDS);
    assertThat(sends.stream().mapToLong(s -> s.path("scheduledAt").asLong()).max().orElseThrow())
        .as("the latest send is scheduled days after the blast was produced")
        .isGreaterThan(
            Instant.parse(produced.path("producedTo").asText()).toEpochMilli()
                + Duration.ofDays(DAYS - 1).toMillis());
    assertThat(decided.stream().filter(r -> r.topic().equals(dlq))).as("dead letters").isEmpty();

    // The delivery worker reads the outputs to their end, once sendcap has stopped.
    ScriptRun worker =
        client.run(
            Client.Script.DELIVERY_WORKER,
            "--bootstrap",
            kafka.bootstrapServers(),
            "--registry",
            registry.url(),
            "--topics",
            deliveries + "," + suppressed);
    Files.write(OUTPUT.resolve(client.name() + "-delivery-worker.jsonl"), worker.stdout());
    worker.log(4);
    assertThat(worker.exitCode()).as("delivery worker's exit code").isZero();
    JsonNode end = worker.event("end");
    assertThat(end.path("reachedEnd").asBoolean()).as("reached the end offsets").isTrue();
    assertThat(end.path("errors").asInt()).as("records it could not decode").isZero();
    List<JsonNode> read = worker.records();
    LOG.info("{} delivery worker's outcomes: {}", client, summary(read));

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
    assertThat(schemaIds.keySet()).containsExactlyInAnyOrder(deliveries, suppressed);
    schemaIds.values().forEach(ids -> assertThat(ids).hasSize(1).doesNotContain(inputSchemaId));
    assertThat(schemaIds.get(deliveries)).doesNotContainAnyElementsOf(schemaIds.get(suppressed));
  }

  /**
   * Checks that the input records are those the engine announced: in the Confluent framing with its
   * schema id, each stamped by the producer within the time it was producing.
   */
  private void assertInputStampedAtProduceTime(String topic, JsonNode produced, int schemaId) {
    long from = Instant.parse(produced.path("producedFrom").asText()).toEpochMilli();
    long to = Instant.parse(produced.path("producedTo").asText()).toEpochMilli();
    List<ConsumerRecord<byte[], byte[]>> input;
    try (TopicReader reader = new TopicReader(kafka.bootstrapServers(), topic)) {
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
            case NOT_A_REPLAY, KEY_REFUSED ->
                throw new IllegalStateException("the model decides no probe and refuses no key");
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

  /**
   * A pair of third-party programs, a campaign engine and a delivery worker, run by {@code
   * interpreter} from {@code dir}; {@code cannotRun} says why they cannot run here, or is null.
   */
  private record Client(String name, Path interpreter, Path dir, String cannotRun) {
    enum Script {
      CAMPAIGN_ENGINE,
      DELIVERY_WORKER
    }

    private static final Path NODE_PROJECT = Path.of("src", "demo", "test", "node");
    private static final Path PYTHON_PROJECT = Path.of("src", "demo", "test", "python");
    private static final List<String> NODE_MODULES =
        List.of("kafkajs", "@confluentinc/schemaregistry");

    /**
     * The Node.js clients: {@code node} from the PATH, the packages installed by {@code npm ci}.
     */
    static Client node() {
      Path node = onPath("node");
      String cannotRun = null;
      if (node == null) {
        cannotRun = "node is not on the PATH (install Node.js 20 or later)";
      } else {
        List<String> absent =
            NODE_MODULES.stream()
                .filter(m -> !Files.isDirectory(NODE_PROJECT.resolve("node_modules").resolve(m)))
                .toList();
        if (!absent.isEmpty()) {
          cannotRun =
              "the Node packages "
                  + absent
                  + " are not installed in "
                  + NODE_PROJECT
                  + " (run `npm ci` there, as .ci/run does)";
        }
      }
      return new Client("node", node, NODE_PROJECT, cannotRun);
    }

    /**
     * The Python clients: Debian's {@code /usr/bin/python3} (where its {@code python3-*} packages
     * are), else the first {@code python3} on the PATH, that imports {@code confluent_kafka.avro}.
     */
    static Client python() {
      List<Path> candidates = new ArrayList<>();
      candidates.add(Path.of("/usr/bin/python3"));
      Path onPath = onPath("python3");
      if (onPath != null) {
        candidates.add(onPath);
      }
      for (Path python : candidates) {
        if (Files.isExecutable(python) && imports(python)) {
          return new Client("python", python, PYTHON_PROJECT, null);
        }
      }
      return new Client(
          "python",
          null,
          PYTHON_PROJECT,
          "no python3 of "
              + candidates
              + " imports confluent_kafka.avro, avro and requests (apt-get install python3-confluent-kafka"
              + " python3-avro python3-requests, as .ci/run does)");
    }

    private static boolean imports(Path python) {
      try {
        Process p =
            new ProcessBuilder(
                    python.toString(), "-c", "import confluent_kafka.avro, avro, requests")
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
          p.destroyForcibly().waitFor();
          return false;
        }
        return p.exitValue() == 0;
      } catch (IOException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      }
    }

    private static Path onPath(String executable) {
      for (String entry : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
        Path candidate = Path.of(entry.isEmpty() ? "." : entry, executable);
        if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
          return candidate.toAbsolutePath();
        }
      }
      return null;
    }

    private String file(Script script) {
      return switch (script) {
        case CAMPAIGN_ENGINE -> name.equals("node") ? "campaign-engine.js" : "campaign_engine.py";
        case DELIVERY_WORKER -> name.equals("node") ? "delivery-worker.js" : "delivery_worker.py";
      };
    }

    /**
     * Runs one of the client's scripts, waiting for it to exit (killing it after {@link
     * #SCRIPT_TIMEOUT}).
     */
    ScriptRun run(Script script, String... args) throws IOException {
      String file = file(script);
      List<String> command = new ArrayList<>(List.of(interpreter.toString(), file));
      command.addAll(List.of(args));
      Path out = Files.createTempFile(ThirdPartyClientIT.dir, file, ".out");
      Path err = Files.createTempFile(ThirdPartyClientIT.dir, file, ".err");
      ProcessBuilder builder =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectOutput(out.toFile())
              .redirectError(err.toFile());
      builder.environment().keySet().retainAll(INHERITED_ENVIRONMENT);
      long started = System.nanoTime();
      Process process = builder.start();
      LOG.info("running {} {} (pid {})", interpreter.getFileName(), file, process.pid());
      try {
        if (!process.waitFor(SCRIPT_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
          process.destroyForcibly().waitFor();
          fail(
              "%s did not exit within %s; it printed:%n%s%n%s",
              file, SCRIPT_TIMEOUT, Files.readString(out), Files.readString(err));
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while " + file + " ran", e);
      }
      return new ScriptRun(
          file,
          process.exitValue(),
          Files.readAllLines(out, StandardCharsets.UTF_8).stream()
              .filter(l -> !l.isBlank())
              .toList(),
          Files.readString(err, StandardCharsets.UTF_8),
          Duration.ofNanos(System.nanoTime() - started));
    }

    @Override
    public String toString() {
      return name.equals("node") ? "Node.js" : "Python";
    }
  }

  /** What a script printed: JSON lines on its standard output, anything on its error. */
  private record ScriptRun(
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
          "{} exited with {} after {} ms; {} lines of output:",
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
        LOG.info("{} on its standard error:\n{}", script, stderr.strip());
      }
    }
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

  private static boolean underCi() {
    return "true".equals(System.getenv("CI"));
  }
}
