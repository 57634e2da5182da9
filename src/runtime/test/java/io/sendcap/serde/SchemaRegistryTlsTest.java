package io.sendcap.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.sendcap.avro.Delivery;
import io.sendcap.testing.FakeSchemaRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The registry client over TLS: a self-signed registry certificate trusted through {@code
 * schema.registry.ssl.truststore.*}, and a client certificate presented through {@code
 * schema.registry.ssl.keystore.*} to a registry that requires one. The key stores are made with the
 * JDK's keytool.
 */
class SchemaRegistryTlsTest {
  private static final String PASSWORD = "store-Pa55";

  @TempDir static Path dir;
  private static Path serverStore;
  private static Path serverTrust;
  private static Path clientStore;
  private static Path clientTrust;

  @BeforeAll
  static void makeKeyStores() throws Exception {
    serverStore = dir.resolve("registry.p12");
    clientStore = dir.resolve("sendcap.p12");
    serverTrust = dir.resolve("registry-trusts.p12");
    clientTrust = dir.resolve("sendcap-trusts.p12");
    keytool(
        "-genkeypair -alias registry -keyalg EC -groupname secp256r1 -validity 2 -dname"
            + " CN=127.0.0.1 -ext SAN=ip:127.0.0.1 -storetype PKCS12 -keystore "
            + serverStore);
    keytool(
        "-genkeypair -alias sendcap -keyalg EC -groupname secp256r1 -validity 2 -dname CN=sendcap"
            + " -storetype PKCS12 -keystore "
            + clientStore);
    trust(serverStore, "registry", clientTrust);
    trust(clientStore, "sendcap", serverTrust);
  }

  /** Exports a certificate from one store and imports it into a trust store. */
  private static void trust(Path from, String alias, Path into) throws Exception {
    Path cert = dir.resolve(alias + ".crt");
    keytool("-exportcert -alias " + alias + " -keystore " + from + " -file " + cert);
    keytool(
        "-importcert -noprompt -alias "
            + alias
            + " -file "
            + cert
            + " -storetype PKCS12 -keystore "
            + into);
  }

  /** Runs the JDK's keytool with space-separated arguments and the store password. */
  private static void keytool(String args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    command.addAll(List.of(args.split(" ")));
    command.addAll(List.of("-storepass", PASSWORD));
    Process process =
        new ProcessBuilder(command)
            .redirectErrorStream(true)
            .redirectOutput(dir.resolve("keytool.log").toFile())
            .start();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(process.exitValue()).as(String.join(" ", command)).isZero();
  }

  private static SSLContext serverTls() throws IOException, GeneralSecurityException {
    KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    keys.init(
        KeyStore.getInstance(serverStore.toFile(), PASSWORD.toCharArray()), PASSWORD.toCharArray());
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(KeyStore.getInstance(serverTrust.toFile(), PASSWORD.toCharArray()));
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(keys.getKeyManagers(), trust.getTrustManagers(), null);
    return tls;
  }

  @Test
  void trustsTheRegistryThroughTheTruststoreSettings() throws Exception {
    try (FakeSchemaRegistry registry = FakeSchemaRegistry.https(serverTls(), false)) {
      SchemaRegistryClient client =
          new SchemaRegistryClient(
              SchemaRegistrySettings.from(
                  Map.of(
                      "schema.registry.url", registry.url(),
                      "schema.registry.ssl.truststore.location", clientTrust.toString(),
                      "schema.registry.ssl.truststore.password", PASSWORD)));

      assertThat(registry.url()).startsWith("https://");
      assertThat(client.register("deliveries-value", Delivery.SCHEMA$)).isPositive();

      SchemaRegistryUnavailableException untrusted =
          catchThrowableOfType(
              SchemaRegistryUnavailableException.class,
              () ->
                  new SchemaRegistryClient(SchemaRegistrySettings.of(registry.url()))
                      .register("deliveries-value", Delivery.SCHEMA$));
      assertThat(untrusted).hasMessageContaining(registry.url() + ": ");
    }
  }

  @Test
  void presentsTheKeystoresCertificateToARegistryThatRequiresOne() throws Exception {
    try (FakeSchemaRegistry registry = FakeSchemaRegistry.https(serverTls(), true)) {
      Map<String, String> trustOnly =
          Map.of(
              "schema.registry.url", registry.url(),
              "schema.registry.ssl.truststore.location", clientTrust.toString(),
              "schema.registry.ssl.truststore.password", PASSWORD);
      Map<String, String> mutual = new HashMap<>(trustOnly);
      mutual.put("schema.registry.ssl.keystore.location", clientStore.toString());
      mutual.put("schema.registry.ssl.keystore.password", PASSWORD);

      assertThat(
              new SchemaRegistryClient(SchemaRegistrySettings.from(mutual))
                  .register("deliveries-value", Delivery.SCHEMA$))
          .isPositive();
      assertThat(
              catchThrowableOfType(
                  SchemaRegistryUnavailableException.class,
                  () ->
                      new SchemaRegistryClient(SchemaRegistrySettings.from(trustOnly))
                          .register("deliveries-value", Delivery.SCHEMA$)))
          .isNotNull();
    }
  }

  @Test
  void aKeyStoreThatDoesNotOpenIsReportedWithoutItsPassword() {
    ConfigException e =
        catchThrowableOfType(
            ConfigException.class,
            () ->
                SchemaRegistrySettings.from(
                    Map.of(
                        "schema.registry.url",
                        "https://registry:8081",
                        "schema.registry.ssl.truststore.location",
                        clientTrust.toString(),
                        "schema.registry.ssl.truststore.password",
                        "not-" + PASSWORD)));

    assertThat(e.getMessage())
        .startsWith(
            "schema.registry.ssl.truststore.location=\""
                + clientTrust
                + "\" is invalid: a PKCS12 or JKS key store that opens with"
                + " schema.registry.ssl.truststore.password: ")
        .doesNotContain(PASSWORD);
  }
}
