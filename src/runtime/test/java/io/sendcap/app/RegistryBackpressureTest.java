package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.serde.SchemaRegistryClient;
import io.sendcap.serde.SchemaRegistrySettings;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import io.sendcap.testing.FakeSchemaRegistry;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.time.InstantSource;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The waits of stream threads for an unreachable schema registry, their meters and their end. */
class RegistryBackpressureTest {
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final RegistryBackpressure outage =
      new RegistryBackpressure(InstantSource.system(), metrics);

  /** A real failure of the registry client: nothing listens on the port it is given. */
  private static SchemaRegistryUnavailableException unreachable() throws IOException {
    int port;
    try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = free.getLocalPort();
    }
    SchemaRegistryClient client =
        new SchemaRegistryClient(SchemaRegistrySettings.of("http://127.0.0.1:" + port));
    return (SchemaRegistryUnavailableException) catchThrowable(() -> client.schemaById(1));
  }

  private double unavailable() {
    return metrics.get("sendcap.registry.unavailable").gauge().value();
  }

  private double outages() {
    return metrics.get("sendcap.registry.outages").counter().count();
  }

  @Test
  void anOutageLastsFromTheFirstFailedTryToTheFirstAnswerAndIsCountedOnce() throws IOException {
    SchemaRegistryUnavailableException cause = unreachable();
    assertThat(unavailable()).isZero();

    outage.await(cause, 1);
    outage.await(cause, 2);
    assertThat(outage.waiting()).isTrue();
    assertThat(unavailable()).isEqualTo(1.0);
    assertThat(outages()).isEqualTo(1.0);

    outage.answered();
    outage.answered();
    assertThat(unavailable()).isZero();
    assertThat(outages()).isEqualTo(1.0);

    outage.await(cause, 1);
    assertThat(outages()).as("a new outage").isEqualTo(2.0);
  }

  @Test
  void healthSaysWhichSettingToFixWhenTheRegistryRefusesSendcap() throws IOException {
    try (FakeSchemaRegistry registry = new FakeSchemaRegistry()) {
      registry.requireUserInfo("sendcap:right");
      SchemaRegistryClient client =
          new SchemaRegistryClient(
              SchemaRegistrySettings.from(
                  Map.of(
                      SchemaRegistrySettings.URL,
                      registry.url(),
                      SchemaRegistrySettings.USER_INFO,
                      "sendcap:wrong")));
      SchemaRegistryUnavailableException refused =
          (SchemaRegistryUnavailableException) catchThrowable(() -> client.schemaById(1));

      outage.await(refused, 1);

      assertThat(outage.health().orElseThrow())
          .startsWith("a send waits: the schema registry refuses sendcap")
          .contains("check the credentials of schema.registry.basic.auth.user.info")
          .doesNotContain("wrong");
      outage.answered();
      assertThat(outage.health()).isEmpty();
    }
  }

  @Test
  void healthSaysHowLongAnOutageHasLasted() throws IOException {
    outage.await(unreachable(), 1);

    assertThat(outage.health().orElseThrow())
        .startsWith("a send waits for the schema registry, unreachable for 0 s");
  }

  @Test
  void closingEndsTheWaitsWithTheirFailure() throws Exception {
    SchemaRegistryUnavailableException cause = unreachable();
    CompletableFuture<Throwable> waiting =
        CompletableFuture.supplyAsync(
            () ->
                catchThrowable(
                    () -> {
                      while (true) {
                        outage.await(cause, 20);
                      }
                    }));
    TopicReader.await("a thread to wait", Duration.ofSeconds(5), outage::waiting);

    outage.close();

    assertThat(waiting.get(5, TimeUnit.SECONDS)).isSameAs(cause);
    assertThat(catchThrowable(() -> outage.await(cause, 1))).isSameAs(cause);
  }
}
