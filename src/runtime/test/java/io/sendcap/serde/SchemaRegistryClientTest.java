package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.testing.FakeSchemaRegistry;
import io.sendcap.testing.FakeSchemaRegistry.Request;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.avro.Schema;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SchemaRegistryClientTest {
  private static final String PASSWORD = "s3cret-Pa55";
  private final FakeSchemaRegistry registry;

  SchemaRegistryClientTest() throws IOException {
    registry = new FakeSchemaRegistry();
  }

  @AfterEach
  void stop() {
    registry.close();
  }

  private SchemaRegistryClient client(String... urls) {
    return new SchemaRegistryClient(SchemaRegistrySettings.of(urls));
  }

  @Test
  void registersASelfContainedSchemaUnderASubjectWithTheRegistrysContentType() {
    SchemaRegistryClient client = client(registry.url());

    int id = client.register("deliveries-value", Delivery.SCHEMA$);

    assertThat(id).isEqualTo(FakeSchemaRegistry.FIRST_ID);
    assertThat(registry.requests()).hasSize(1);
    Request request = registry.requests().get(0);
    assertThat(request).hasToString("POST /subjects/deliveries-value/versions");
    assertThat(request.contentType()).isEqualTo("application/vnd.schemaregistry.v1+json");
    // ScheduledSend is inlined: the registered text parses on its own, with no other type known.
    String registered = registry.schema(id).orElseThrow();
    assertThat(new Schema.Parser().parse(registered)).isEqualTo(Delivery.SCHEMA$);
    assertThat(registered).contains("\"name\":\"ScheduledSend\"").contains("\"messageId\"");
  }

  @Test
  void looksUpWhetherASubjectHoldsASchema() {
    int id = registry.register("suppressed-value", Suppression.SCHEMA$);
    SchemaRegistryClient client = client(registry.url());

    assertThat(client.lookup("suppressed-value", Suppression.SCHEMA$)).hasValue(id);
    assertThat(client.lookup("suppressed-value", Delivery.SCHEMA$)).isEmpty();
    assertThat(client.lookup("deliveries-value", Delivery.SCHEMA$)).isEmpty();
    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly(
            "POST /subjects/suppressed-value",
            "POST /subjects/suppressed-value",
            "POST /subjects/deliveries-value");
  }

  @Test
  void fetchesASchemaById() {
    int id = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);

    Schema schema = client(registry.url()).schemaById(id);

    assertThat(schema).isEqualTo(ScheduledSend.SCHEMA$);
    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly("GET /schemas/ids/" + id);
  }

  @Test
  void aCachedAnswerCostsNoSecondRequest() {
    SchemaRegistryClient client = client(registry.url());
    int id = client.register("deliveries-value", Delivery.SCHEMA$);
    registry.clearRequests();

    assertThat(client.register("deliveries-value", Delivery.SCHEMA$)).isEqualTo(id);
    assertThat(client.lookup("deliveries-value", Delivery.SCHEMA$)).hasValue(id);
    assertThat(client.schemaById(id)).isEqualTo(Delivery.SCHEMA$);
    assertThat(registry.requests()).isEmpty();

    int other = registry.register("campaign-sends-value", ScheduledSend.SCHEMA$);
    client.schemaById(other);
    client.schemaById(other);
    assertThat(registry.requests()).hasSize(1);
    assertThat(client.requests()).isEqualTo(2);
  }

  @Test
  void theCacheKeepsTheMostRecentlyUsedUpToItsCapacity() {
    int a = registry.register("a-value", ScheduledSend.SCHEMA$);
    int b = registry.register("b-value", Delivery.SCHEMA$);
    int c = registry.register("c-value", Suppression.SCHEMA$);
    SchemaRegistryClient client =
        new SchemaRegistryClient(SchemaRegistrySettings.of(registry.url()), 2);

    client.schemaById(a);
    client.schemaById(b);
    client.schemaById(a); // a is now more recent than b
    client.schemaById(c); // drops b
    registry.clearRequests();
    client.schemaById(a);
    client.schemaById(c);
    assertThat(registry.requests()).isEmpty();
    client.schemaById(b);
    assertThat(registry.requests())
        .extracting(Request::toString)
        .containsExactly("GET /schemas/ids/" + b);
  }

  @Test
  void anUnknownIdFailsNamingTheUrlTheRequestAndTheRegistrysErrorCode() {
    SchemaRegistryException e =
        catchThrowableOfType(
            SchemaRegistryException.class, () -> client(registry.url()).schemaById(4242));

    assertThat(e.status()).isEqualTo(404);
    assertThat(e.errorCode()).isEqualTo(SchemaRegistryException.SCHEMA_NOT_FOUND);
    assertThat(e.notFound()).isTrue();
    assertThat(e)
        .hasMessage(
            "the schema registry at "
                + registry.url()
                + " answered 404 to GET /schemas/ids/4242: error_code 40403, Schema 4242 not found");
  }

  @Test
  void worksUnderAPathSuchAsApicuriosCompatibilityApi() throws IOException {
    try (FakeSchemaRegistry apicurio = new FakeSchemaRegistry("/apis/ccompat/v7")) {
      SchemaRegistryClient client = client(apicurio.url() + "/");
      int id = client.register("deliveries-value", Delivery.SCHEMA$);
      assertThat(client(apicurio.url()).schemaById(id)).isEqualTo(Delivery.SCHEMA$);
    }
  }

  @Test
  void triesTheUrlsInOrderAndSkipsOnesThatCannotBeReached() throws IOException {
    String dead = deadUrl();
    SchemaRegistryClient client = client(dead, registry.url());

    int id = client.register("deliveries-value", Delivery.SCHEMA$);

    assertThat(registry.schema(id)).isPresent();
    assertThat(client.requests()).isEqualTo(2);
  }

  @Test
  void noUrlAnsweringFailsAsUnavailableNamingTheSettingAndEachUrl() throws IOException {
    String dead = deadUrl();
    registry.unavailable(true);

    SchemaRegistryUnavailableException e =
        catchThrowableOfType(
            SchemaRegistryUnavailableException.class,
            () -> client(dead, registry.url()).schemaById(FakeSchemaRegistry.FIRST_ID));

    assertThat(e.getMessage())
        .startsWith("cannot reach the schema registry (schema.registry.url): " + dead + ": ")
        .contains(
            registry.url()
                + ": answered 503 to GET /schemas/ids/257: error_code 50301, Schema registry is"
                + " unavailable");
  }

  @Test
  void aRegistryThatAnswersTooLateIsUnavailable() {
    registry.delay(2_000);
    SchemaRegistryClient client =
        new SchemaRegistryClient(
            new SchemaRegistrySettings(
                List.of(java.net.URI.create(registry.url())),
                Optional.empty(),
                Optional.empty(),
                Optional.empty(),
                Duration.ofMillis(200),
                true,
                SchemaRegistrySettings.DEFAULT_MAX_RESPONSE_BYTES,
                Duration.ofMinutes(1)));

    assertThat(
            catchThrowableOfType(
                SchemaRegistryUnavailableException.class, () -> client.schemaById(1)))
        .hasMessageContaining(
            registry.url() + ": no answer within 200 ms (schema.registry.request.timeout.ms)");
  }

  @Test
  void sendsBasicAuthenticationAndNeverShowsThePassword() {
    registry.requireUserInfo("sendcap:" + PASSWORD);
    SchemaRegistryClient client =
        new SchemaRegistryClient(
            SchemaRegistrySettings.from(
                Map.of(
                    "schema.registry.url",
                    registry.url(),
                    "schema.registry.basic.auth.user.info",
                    "sendcap:" + PASSWORD)));

    int id = client.register("deliveries-value", Delivery.SCHEMA$);

    assertThat(id).isPositive();
    assertThat(registry.requests().get(0).authorization())
        .isEqualTo(
            "Basic "
                + Base64.getEncoder()
                    .encodeToString(("sendcap:" + PASSWORD).getBytes(StandardCharsets.UTF_8)));
    assertThat(client.settings().toString()).doesNotContain(PASSWORD).contains("sendcap:[hidden]");

    SchemaRegistryClient wrong =
        new SchemaRegistryClient(
            SchemaRegistrySettings.from(
                Map.of(
                    "schema.registry.url",
                    registry.url(),
                    "schema.registry.basic.auth.user.info",
                    "sendcap:not-" + PASSWORD)));
    SchemaRegistryConfigurationException refused =
        catchThrowableOfType(
            SchemaRegistryConfigurationException.class,
            () -> wrong.register("x-value", Delivery.SCHEMA$));
    assertThat(refused)
        .hasMessage(
            "the schema registry refuses sendcap ("
                + registry.url()
                + ": answered 401 to POST /subjects/x-value/versions: error_code 401,"
                + " Unauthorized): check the credentials of schema.registry.basic.auth.user.info"
                + " (or the client certificate of schema.registry.ssl.keystore.location) and"
                + " their rights in the registry");
  }

  @Test
  void invalidSettingsAreAllReportedWithoutTheirSecrets() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class,
            () ->
                SchemaRegistrySettings.from(
                    Map.of(
                        "schema.registry.url",
                        "https://sendcap:" + PASSWORD + "@registry:8081",
                        "schema.registry.basic.auth.user.info",
                        PASSWORD,
                        "schema.registry.request.timeout.ms",
                        "0",
                        "auto.register.schemas",
                        "yes",
                        "schema.registry.ssl.truststore.location",
                        "no/such.p12",
                        "schema.registry.ssl.truststore.password",
                        PASSWORD)));

    assertThat(e.getMessage())
        .doesNotContain(PASSWORD)
        .contains(
            "schema.registry.url=\"https://[hidden]@registry:8081\" is invalid: http://host:port"
                + " or https://host:port, optionally with a path, comma-separated; credentials go"
                + " in schema.registry.basic.auth.user.info")
        .contains("schema.registry.basic.auth.user.info=\"[hidden]\" is invalid: user:password")
        .contains(
            "schema.registry.request.timeout.ms=\"0\" is invalid: a whole number from 1 to"
                + " 2147483647")
        .contains("auto.register.schemas=\"yes\" is invalid: true or false")
        .contains(
            "schema.registry.ssl.truststore.location=\"no/such.p12\" is invalid: a readable key"
                + " store file (PKCS12 or JKS)");
    assertThat(SchemaRegistrySettings.problems(Map.of()))
        .containsExactly(
            "schema.registry.url=(missing) is invalid: one or more comma-separated http:// or"
                + " https:// URLs of a schema registry with the Confluent-compatible API, required"
                + " by avro.serde=confluent");
  }

  /** The URL of a port nothing listens on. */
  static String deadUrl() throws IOException {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return "http://127.0.0.1:" + socket.getLocalPort();
    }
  }
}
