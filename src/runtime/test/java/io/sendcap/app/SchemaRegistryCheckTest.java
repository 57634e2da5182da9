package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Properties;
import org.apache.avro.Schema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class SchemaRegistryCheckTest {
  private final FakeSchemaRegistry registry;

  SchemaRegistryCheckTest() throws IOException {
    registry = new FakeSchemaRegistry();
  }

  @AfterEach
  void stop() {
    registry.close();
  }

  private static SendcapConfig confluent(String url, String autoRegister) {
    Properties p = new Properties();
    p.setProperty("avro.serde", "confluent");
    p.setProperty("schema.registry.url", url);
    p.setProperty("auto.register.schemas", autoRegister);
    p.setProperty("topic.deliveries", "sends-ok");
    return SendcapConfig.from(p, "test");
  }

  @Test
  void registersTheOutputSchemasUnderTheirTopicsValueSubjects() {
    SchemaRegistryCheck.require(confluent(registry.url(), "true"));

    assertThat(registry.versions("sends-ok-value")).hasSize(1);
    assertThat(registry.versions("suppressed-value")).hasSize(1);
    String delivery = registry.schema(registry.versions("sends-ok-value").get(0)).orElseThrow();
    assertThat(new Schema.Parser().parse(delivery)).isEqualTo(Delivery.SCHEMA$);
  }

  @Test
  void withoutAutoRegistrationAMissingSchemaFailsNamingTheSubjectAndTheUrl() {
    registry.register("suppressed-value", Suppression.SCHEMA$);

    SendcapApp.StartupException e =
        catchThrowableOfType(
            SendcapApp.StartupException.class,
            () -> SchemaRegistryCheck.require(confluent(registry.url(), "false")));

    assertThat(e)
        .hasMessage(
            "the schema of io.sendcap.avro.Delivery is not registered under subject sends-ok-value"
                + " in the schema registry at ["
                + registry.url()
                + "], and auto.register.schemas=false: register it there (self-contained, as"
                + " sendcap writes it), or set auto.register.schemas=true");
    assertThat(registry.versions("sends-ok-value")).isEmpty();

    registry.register("sends-ok-value", Delivery.SCHEMA$);
    SchemaRegistryCheck.require(confluent(registry.url(), "false"));
  }

  @Test
  void anUnreachableRegistryFailsInOneLineNamingTheSetting() throws IOException {
    String dead;
    try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      dead = "http://127.0.0.1:" + socket.getLocalPort();
    }

    SendcapApp.StartupException e =
        catchThrowableOfType(
            SendcapApp.StartupException.class,
            () -> SchemaRegistryCheck.require(confluent(dead, "true")));

    assertThat(e.getMessage())
        .startsWith("cannot reach the schema registry (schema.registry.url): " + dead + ": ")
        .doesNotContain("\n");
  }

  @Test
  void singleObjectNeedsNoRegistry() {
    SchemaRegistryCheck.require(SendcapConfig.from(new Properties(), "test"));

    assertThat(registry.requests()).isEmpty();
  }
}
