package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The embedded Schema Registry, spoken to through its Confluent-compatible API with the JDK's HTTP
 * client as a Confluent serializer speaks to it: the calls and answers sendcap's Confluent framing
 * relies on, and a process that is gone, with its port, once closed.
 */
class EmbeddedRegistryIT {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedRegistryIT.class);
  private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final HttpClient HTTP =
      HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).build();

  private static EmbeddedRegistry registry;

  @BeforeAll
  static void start() {
    long started = System.nanoTime();
    registry = EmbeddedRegistry.start();
    LOG.info(
        "The Schema Registry answered {} ms after start() was called",
        Duration.ofNanos(System.nanoTime() - started).toMillis());
  }

  @AfterAll
  static void close() {
    if (registry != null) {
      registry.close();
    }
  }

  @Test
  void servesTheConfluentCompatibleApiOnLoopback() throws Exception {
    assertThat(registry.url())
        .isEqualTo("http://127.0.0.1:" + registry.port() + "/apis/ccompat/v7");
    assertThat(get("/config").path("compatibilityLevel").asText()).isEqualTo("BACKWARD");
  }

  @Test
  void registersAnAvroSchemaAndServesItBackByIdOnceForTheSameSchema() throws Exception {
    Schema schema = ScheduledSend.getClassSchema();

    int id = register("registered-value", schema);
    assertThat(schemaById(id)).isEqualTo(schema);
    assertThat(register("registered-value", schema)).as("the same schema again").isEqualTo(id);
    assertThat(register("registered-again-value", schema))
        .as("the same schema under another subject")
        .isEqualTo(id);

    JsonNode lookup = post("/subjects/registered-value", body(schema));
    assertThat(lookup.path("id").asInt()).isEqualTo(id);
    assertThat(lookup.path("version").asInt()).isEqualTo(1);
  }

  @Test
  void servesASchemaThatEmbedsAnotherNamedTypeInlined() throws Exception {
    Schema delivery = Delivery.getClassSchema();

    int id = register("inlined-value", delivery);

    assertThat(schemaById(id)).isEqualTo(delivery);
    assertThat(schemaById(id).getField("send").schema()).isEqualTo(ScheduledSend.getClassSchema());
  }

  @Test
  void acceptsAnAddedOptionalFieldAsANewVersionAndRefusesAnIncompatibleChange() throws Exception {
    Schema v1 = record(SchemaBuilder.record("Evolving").namespace("io.sendcap.test").fields());
    Schema v2 =
        record(
            SchemaBuilder.record("Evolving")
                .namespace("io.sendcap.test")
                .fields()
                .optionalString("note"));
    Schema incompatible =
        SchemaBuilder.record("Evolving")
            .namespace("io.sendcap.test")
            .fields()
            .requiredString("userId")
            .endRecord();

    int first = register("evolving-value", v1);
    int second = register("evolving-value", v2);

    assertThat(second).isNotEqualTo(first);
    assertThat(JSON.convertValue(get("/subjects/evolving-value/versions"), int[].class))
        .containsExactly(1, 2);
    HttpResponse<String> refused =
        send(postRequest("/subjects/evolving-value/versions", body(incompatible)));
    assertThat(refused.statusCode()).as(refused.body()).isEqualTo(409);
    assertThat(JSON.readTree(refused.body()).path("error_code").asInt()).isEqualTo(409);
  }

  @Test
  void answersAnUnknownIdOrSchemaWithConfluentsErrorCodes() throws Exception {
    HttpResponse<String> unknownId = send(getRequest("/schemas/ids/999999"));
    assertThat(unknownId.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(unknownId.body()).path("error_code").asInt()).isEqualTo(40403);

    Schema schema = record(SchemaBuilder.record("Known").namespace("io.sendcap.test").fields());
    register("lookup-value", schema);
    Schema other = record(SchemaBuilder.record("Unknown").namespace("io.sendcap.test").fields());
    HttpResponse<String> unknownSchema = send(postRequest("/subjects/lookup-value", body(other)));
    assertThat(unknownSchema.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(unknownSchema.body()).path("error_code").asInt()).isEqualTo(40403);

    HttpResponse<String> unknownSubject =
        send(postRequest("/subjects/no-such-subject-value", body(schema)));
    assertThat(unknownSubject.statusCode()).isEqualTo(404);
    assertThat(JSON.readTree(unknownSubject.body()).path("error_code").asInt()).isEqualTo(40401);
  }

  @Test
  void restartKeepsThePortTheSchemasAndTheirIds() throws Exception {
    Schema schema = record(SchemaBuilder.record("Kept").namespace("io.sendcap.test").fields());
    int id = register("kept-value", schema);
    int port = registry.port();

    registry.stop();

    assertThat(registry.isRunning()).isFalse();
    assertThatThrownBy(() -> send(getRequest("/subjects"))).isInstanceOf(IOException.class);

    long restarted = System.nanoTime();
    registry.restart();
    LOG.info(
        "The Schema Registry answered again {} ms after restart() was called",
        Duration.ofNanos(System.nanoTime() - restarted).toMillis());

    assertThat(registry.port()).isEqualTo(port);
    assertThat(schemaById(id)).isEqualTo(schema);
    assertThat(register("kept-value", schema)).isEqualTo(id);
    assertThat(get("/config").path("compatibilityLevel").asText()).isEqualTo("BACKWARD");
  }

  @Test
  void closeEndsTheProcessFreesThePortAndDeletesTheSchemas() throws Exception {
    EmbeddedRegistry own = EmbeddedRegistry.start();
    long pid = own.pid();
    int port = own.port();
    Path log = own.logFile();
    assertThat(ProcessHandle.of(pid)).hasValueSatisfying(p -> assertThat(p.isAlive()).isTrue());
    assertThat(log).isRegularFile();

    own.close();

    assertThat(own.isRunning()).isFalse();
    assertThat(ProcessHandle.of(pid).filter(ProcessHandle::isAlive)).isEmpty();
    try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      assertThat(socket.getLocalPort()).isEqualTo(port);
    }
    assertThat(Files.exists(log.getParent())).isFalse();
  }

  @Test
  void aRegistryThatCannotStartFailsWithTheTailOfItsLog() {
    EmbeddedRegistry broken =
        new EmbeddedRegistry(Path.of("/nonexistent/apicurio-registry-runner.jar"), 1);

    assertThatThrownBy(() -> EmbeddedRegistry.launched(broken))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("exited with code 1")
        .hasMessageContaining("/nonexistent/apicurio-registry-runner.jar");
    assertThat(broken.isRunning()).isFalse();
  }

  @Test
  void findsTheDistributionTheBuildUnpacked() throws IOException {
    Path jar = EmbeddedRegistry.runnerJar();

    assertThat(jar).isRegularFile();
    assertThat(jar.getParent().getFileName()).hasToString("apicurio-registry");
    // The demo module's build directory: target/demo, beside its classes and jar.
    assertThat(jar.getParent().getParent().toRealPath())
        .isEqualTo(Path.of("target", "demo").toRealPath());
  }

  private static Schema record(SchemaBuilder.FieldAssembler<Schema> fields) {
    return fields.requiredLong("userId").endRecord();
  }

  private static int register(String subject, Schema schema) throws Exception {
    JsonNode answer = post("/subjects/" + subject + "/versions", body(schema));
    assertThat(answer.has("id")).as(answer.toString()).isTrue();
    return answer.path("id").asInt();
  }

  private static Schema schemaById(int id) throws Exception {
    JsonNode answer = get("/schemas/ids/" + id);
    return new Schema.Parser().parse(answer.path("schema").asText());
  }

  private static String body(Schema schema) throws IOException {
    return JSON.writeValueAsString(JSON.createObjectNode().put("schema", schema.toString()));
  }

  private static JsonNode get(String path) throws Exception {
    return ok(send(getRequest(path)));
  }

  private static JsonNode post(String path, String body) throws Exception {
    return ok(send(postRequest(path, body)));
  }

  private static JsonNode ok(HttpResponse<String> response) throws IOException {
    assertThat(response.statusCode()).as(response.uri() + ": " + response.body()).isEqualTo(200);
    return JSON.readTree(response.body());
  }

  private static HttpRequest getRequest(String path) {
    return HttpRequest.newBuilder(URI.create(registry.url() + path))
        .timeout(Duration.ofSeconds(10))
        .header("Accept", CONTENT_TYPE)
        .GET()
        .build();
  }

  private static HttpRequest postRequest(String path, String body) {
    return HttpRequest.newBuilder(URI.create(registry.url() + path))
        .timeout(Duration.ofSeconds(10))
        .header("Content-Type", CONTENT_TYPE)
        .header("Accept", CONTENT_TYPE)
        .POST(HttpRequest.BodyPublishers.ofString(body))
        .build();
  }

  private static HttpResponse<String> send(HttpRequest request) throws Exception {
    return HTTP.send(request, HttpResponse.BodyHandlers.ofString());
  }
}
