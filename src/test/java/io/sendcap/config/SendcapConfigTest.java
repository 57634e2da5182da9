package io.sendcap.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class SendcapConfigTest {
  @Test
  void theShippedFileHoldsTheDefaults() {
    SendcapConfig fromFile = SendcapConfig.load(Path.of("config/sendcap.properties"));
    SendcapConfig defaults = SendcapConfig.from(new Properties(), "none");
    assertThat(fromFile.topics()).isEqualTo(defaults.topics());
    assertThat(fromFile.limiter()).isEqualTo(defaults.limiter());
    assertThat(fromFile.batch()).isEqualTo(defaults.batch());
    assertThat(fromFile.streams()).isEqualTo(defaults.streams());
    assertThat(defaults.streams().getProperty("processing.guarantee")).isEqualTo("exactly_once_v2");
    assertThat(defaults.batch()).isEqualTo(new SendcapConfig.Batch(500, Duration.ofMillis(50)));
    assertThat(defaults.limiter().failureMode()).isEqualTo(SendcapConfig.FailureMode.BLOCK);
  }

  @Test
  void badValuesAreAllReportedNamingKeyValueAndWhatIsAllowed() {
    Properties p = new Properties();
    p.setProperty("cap.redis.failure-mode", "ignore");
    p.setProperty("batch.max.records", "0");
    p.setProperty("cap.redis.uri", "localhost:6379");
    p.setProperty("cap.clok", "event");
    p.setProperty("processing.guarantee", "exactly_twice");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties"));

    assertThat(e.problems())
        .contains(
            "cap.clok=\"event\" is invalid: unknown key; see config/sendcap.properties",
            "cap.redis.failure-mode=\"ignore\" is invalid: one of block, allow, suppress",
            "batch.max.records=\"0\" is invalid: a whole number from 1 to 100000",
            "cap.redis.uri=\"localhost:6379\" is invalid: redis://host:port or rediss://host:port,"
                + " comma-separated");
    assertThat(e.problems())
        .anySatisfy(m -> assertThat(m).contains("exactly_twice").contains("processing.guarantee"));
  }

  @Test
  void otherKeysArePassedToKafkaStreams() {
    Properties p = new Properties();
    p.setProperty("num.stream.threads", "2");
    p.setProperty("cap.clock", "event");
    SendcapConfig c = SendcapConfig.from(p, "x");
    assertThat(c.streams().getProperty("num.stream.threads")).isEqualTo("2");
    assertThat(c.streams()).doesNotContainKey("cap.clock");
    assertThat(c.limiter().clock()).isEqualTo(SendcapConfig.Clock.EVENT);
  }
}
