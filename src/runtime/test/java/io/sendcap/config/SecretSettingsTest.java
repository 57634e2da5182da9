package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Secrets in the settings: read from the environment or a file rather than written in the file or
 * on a command line, hidden in the settings line, and never repeated by a problem.
 */
class SecretSettingsTest {
  private static final UnaryOperator<String> ENV =
      Map.of("REDIS_PASSWORD", "s3cret-redis", "THREADS", "many-threads", "BATCH", "b4tch")::get;

  @Test
  void anyValueMayComeFromAnEnvironmentVariableOrAFile(@TempDir Path dir) throws IOException {
    Path userInfo = Files.writeString(dir.resolve("registry"), "sendcap:s3cret-registry\n");
    Path jaas = dir.resolve("kafka.properties");
    Files.writeString(
        jaas,
        "jaas=org.apache.kafka.common.security.plain.PlainLoginModule"
            + " required username=\"a\" password=\"s3cret-kafka\";\n");
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", "redis://:${env:REDIS_PASSWORD}@redis:6379");
    p.setProperty("avro.serde", "confluent");
    p.setProperty("schema.registry.url", "http://registry:8081");
    p.setProperty("schema.registry.basic.auth.user.info", "${file:" + userInfo + "}");
    p.setProperty("sasl.jaas.config", "${file:" + jaas + ":jaas}");

    SendcapConfig c = SendcapConfig.from(p, "app.properties", ENV);

    assertThat(c.limiter().uris()).containsExactly("redis://:s3cret-redis@redis:6379");
    assertThat(c.schemaRegistry())
        .containsEntry("schema.registry.basic.auth.user.info", "sendcap:s3cret-registry");
    assertThat(c.streams().getProperty("sasl.jaas.config")).contains("password=\"s3cret-kafka\";");
    assertThat(c.describe()).doesNotContain("s3cret");
  }

  @Test
  void aMissingVariableOrUnreadableFileFailsNamingTheKeyAndTheSourceNotItsContents(
      @TempDir Path dir) throws IOException {
    Path props = Files.writeString(dir.resolve("kafka.properties"), "other=s3cret-other\n");
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", "redis://:${env:NO_SUCH_VARIABLE}@redis:6379");
    p.setProperty("sasl.jaas.config", "${file:" + props + ":jaas}");
    p.setProperty("ssl.key.password", "${file:" + dir.resolve("missing") + "}");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties", ENV));

    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "cap.redis.uri: environment variable NO_SUCH_VARIABLE is not set",
            "sasl.jaas.config: " + props + " has no key jaas",
            "ssl.key.password: cannot read " + dir.resolve("missing") + " (no such file)");
    assertThat(e.getMessage()).doesNotContain("s3cret");
  }

  @Test
  void theSettingsLineHidesPemKeysAndPassphrases() {
    Properties p = new Properties();
    p.setProperty("ssl.keystore.type", "PEM");
    p.setProperty("ssl.keystore.key", "-----BEGIN PRIVATE KEY-----s3cret-pem");
    p.setProperty("producer.ssl.keystore.key", "-----BEGIN PRIVATE KEY-----s3cret-producer");
    p.setProperty("sasl.oauthbearer.assertion.private.key.passphrase", "s3cret-phrase");

    String line = SendcapConfig.from(p, "app.properties", ENV).describe();

    assertThat(line)
        .contains("ssl.keystore.key=[hidden]")
        .contains("sasl.oauthbearer.assertion.private.key.passphrase=[hidden]")
        .doesNotContain("s3cret");
  }

  @Test
  void noProblemRepeatsASecretOrAValueReadFromTheEnvironmentOrAFile() {
    Properties p = new Properties();
    p.setProperty("cap.redis.ssl.truststore.pasword", "s3cret-typo"); // an unknown key
    p.setProperty("batch.max.records", "${env:BATCH}");
    p.setProperty("num.stream.threads", "${env:THREADS}");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties", ENV));

    assertThat(e.problems())
        .contains(
            "cap.redis.ssl.truststore.pasword is invalid: unknown key; see"
                + " config/sendcap.properties",
            "batch.max.records=\"${env:BATCH}\" is invalid: a whole number from 1 to 100000");
    assertThat(e.getMessage())
        .contains("num.stream.threads")
        .doesNotContain("s3cret")
        .doesNotContain("b4tch")
        .doesNotContain("many-threads");
  }
}
