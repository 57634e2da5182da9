package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * How the answers of a schema registry are classified: credentials refused and a path that is no
 * registry are configuration errors, throttling and server errors an outage, and only an unknown id
 * or a schema that cannot be read fail the one record (to the dead-letter topic).
 */
class RegistryAnswersTest {
  private static final String JSON = SchemaRegistryClient.CONTENT_TYPE;
  private final FakeSchemaRegistry registry;
  private final AtomicLong now = new AtomicLong(1_000_000);
  private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

  RegistryAnswersTest() throws IOException {
    registry = new FakeSchemaRegistry();
  }

  @AfterEach
  void stop() {
    registry.close();
  }

  private SchemaRegistryClient client(Map<String, String> more) {
    Map<String, String> configs = new java.util.HashMap<>(more);
    configs.put(SchemaRegistrySettings.URL, registry.url());
    return new SchemaRegistryClient(
        SchemaRegistrySettings.from(configs), SchemaRegistryClient.DEFAULT_CACHE_CAPACITY, clock);
  }

  private SchemaRegistryClient client() {
    return client(Map.of());
  }

  private Throwable answering(int status, String body) {
    registry.answerAll(status, JSON, body.getBytes(StandardCharsets.UTF_8));
    return catchThrowable(() -> client().schemaById(7));
  }

  @Test
  void refusedCredentialsAreAConfigurationErrorNamingTheSetting() {
    Throwable unauthorized = answering(401, "{\"error_code\":401,\"message\":\"Unauthorized\"}");
    Throwable forbidden = answering(403, "{\"error_code\":40301,\"message\":\"Forbidden\"}");

    assertThat(unauthorized)
        .isInstanceOf(SchemaRegistryConfigurationException.class)
        .hasMessageContaining("answered 401 to GET /schemas/ids/7")
        .hasMessageContaining("schema.registry.basic.auth.user.info");
    assertThat(((SchemaRegistryConfigurationException) unauthorized).setting())
        .isEqualTo(SchemaRegistrySettings.USER_INFO);
    assertThat(forbidden)
        .isInstanceOf(SchemaRegistryConfigurationException.class)
        .hasMessageContaining("answered 403")
        .hasMessageContaining("schema.registry.basic.auth.user.info");
  }

  @Test
  void aPathThatIsNoRegistryIsAConfigurationErrorNamingTheUrlSetting() {
    Throwable e = answering(404, "<html><body>Not Found</body></html>");

    assertThat(e)
        .isInstanceOf(SchemaRegistryConfigurationException.class)
        .hasMessageContaining("schema.registry.url");
  }

  @Test
  void throttlingTimeoutsAndServerErrorsAreAnOutage() {
    for (int status : new int[] {408, 429, 500, 502, 503, 504}) {
      assertThat(answering(status, "{\"error_code\":" + status + ",\"message\":\"busy\"}"))
          .as("status " + status)
          .isInstanceOf(SchemaRegistryUnavailableException.class)
          .isNotInstanceOf(SchemaRegistryConfigurationException.class);
    }
  }

  @Test
  void garbageIsASchemaThatCannotBeReadForThatIdOnly() {
    for (String body :
        new String[] {
          "<html>502 Bad Gateway</html>",
          "{\"id\":7}",
          "{\"schema\":42}",
          "{\"schema\":\"{not avro\"}",
          "[]",
          "null",
          ""
        }) {
      assertThat(answering(200, body))
          .as(body)
          .isInstanceOf(SchemaRegistryException.class)
          .hasMessageContaining("7");
    }
  }

  @Test
  void anUnknownIdIsRememberedForItsTimeToLiveSoAFloodCostsOneRequest() {
    SchemaRegistryClient client =
        client(Map.of(SchemaRegistrySettings.MISSING_ID_CACHE_TTL, "60000"));
    for (int i = 0; i < 100; i++) {
      assertThat(catchThrowable(() -> client.schemaById(4242)))
          .isInstanceOf(SchemaRegistryException.class)
          .hasMessageContaining("40403");
    }
    assertThat(client.requests()).isEqualTo(1);

    now.addAndGet(60_001);
    assertThat(catchThrowable(() -> client.schemaById(4242)))
        .isInstanceOf(SchemaRegistryException.class);
    assertThat(client.requests()).isEqualTo(2);
  }

  @Test
  void anUnreadableSchemaIsRememberedToo() {
    registry.answerAll(200, JSON, "{\"schema\":\"{not avro\"}".getBytes(StandardCharsets.UTF_8));
    SchemaRegistryClient client = client();
    catchThrowable(() -> client.schemaById(7));
    catchThrowable(() -> client.schemaById(7));

    assertThat(client.requests()).isEqualTo(1);
  }

  @Test
  void anAnswerWhoseBodyNeverEndsIsAnOutageWithinTheRequestTimeout() throws IOException {
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread peer =
          new Thread(
              () -> {
                try (Socket socket = server.accept()) {
                  BufferedReader in =
                      new BufferedReader(
                          new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                  while (!in.readLine().isEmpty()) {
                    // the request's headers
                  }
                  socket
                      .getOutputStream()
                      .write(
                          ("HTTP/1.1 200 OK\r\nContent-Type: "
                                  + JSON
                                  + "\r\nContent-Length: 1000\r\n\r\n{\"schema\":")
                              .getBytes(StandardCharsets.UTF_8));
                  socket.getOutputStream().flush();
                  in.read(); // holds the connection until the client gives up
                } catch (IOException | NullPointerException e) {
                  // the client gave up
                }
              });
      peer.start();
      SchemaRegistryClient client =
          new SchemaRegistryClient(
              SchemaRegistrySettings.from(
                  Map.of(
                      SchemaRegistrySettings.URL,
                      "http://127.0.0.1:" + server.getLocalPort(),
                      SchemaRegistrySettings.REQUEST_TIMEOUT,
                      "300")));
      long start = System.nanoTime();

      Throwable e = catchThrowable(() -> client.schemaById(7));

      assertThat(e)
          .isInstanceOf(SchemaRegistryUnavailableException.class)
          .hasMessageContaining("no answer within 300 ms (schema.registry.request.timeout.ms)");
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
    }
  }

  @Test
  void anAnswerLargerThanTheBoundIsASchemaThatCannotBeRead() {
    String huge = "{\"schema\":\"" + "x".repeat(100_000) + "\"}";
    registry.answerAll(200, JSON, huge.getBytes(StandardCharsets.UTF_8));

    Throwable e =
        catchThrowable(
            () -> client(Map.of(SchemaRegistrySettings.MAX_RESPONSE_BYTES, "10000")).schemaById(7));

    assertThat(e)
        .isInstanceOf(SchemaRegistryException.class)
        .hasMessageContaining("more than schema.registry.max.response.bytes=10000");
  }

  @Test
  void aSendOfAnIdTheRegistryDoesNotKnowIsUnreadableAndOfARefusingRegistryWaits() {
    ConfluentAvroSerde<ScheduledSend> serde =
        new ConfluentAvroSerde<>(ScheduledSend.class, client(), true, false);
    byte[] framed = {0, 0, 0, 0x10, 0x12, 2};

    assertThat(catchThrowable(() -> serde.decode("campaign-sends", framed)))
        .isInstanceOf(SerializationException.class)
        .isNotInstanceOf(SchemaRegistryUnavailableException.class);
    registry.answerAll(401, JSON, "{}".getBytes(StandardCharsets.UTF_8));
    byte[] other = {0, 0, 0, 0x11, 0x12, 2};
    assertThat(catchThrowable(() -> serde.decode("campaign-sends", other)))
        .isInstanceOf(SchemaRegistryConfigurationException.class);
  }

  @Test
  void newSettingsAreValidatedNamingKeyValueAndWhatIsAllowed() {
    assertThat(
            SchemaRegistrySettings.problems(
                Map.of(
                    SchemaRegistrySettings.URL,
                    "http://localhost:8081",
                    SchemaRegistrySettings.MAX_RESPONSE_BYTES,
                    "12",
                    SchemaRegistrySettings.MISSING_ID_CACHE_TTL,
                    "-1")))
        .containsExactly(
            "schema.registry.max.response.bytes=\"12\" is invalid: a whole number from 1024 to"
                + " 268435456",
            "schema.registry.missing.id.cache.ttl.ms=\"-1\" is invalid: a whole number from 0"
                + " (not remembered) to 86400000");
  }
}
