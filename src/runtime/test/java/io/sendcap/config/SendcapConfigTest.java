package io.sendcap.config;

import static org.assertj.core.api.Assertions.as;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SendcapConfigTest {
  private static final String DURATION =
      "a whole number of milliseconds from 1, or a number with a unit (500ms, 30s, 15m, 1h, 7d),"
          + " at most 3650d";

  @Test
  void durationsTakeUnitsAndMayBeLongerThanAnIntOfMilliseconds() {
    Properties p = new Properties();
    p.setProperty("cap.max-skew.ms", "30d");
    p.setProperty("cap.idempotency.retention.ms", "2678400000");
    p.setProperty("batch.max.wait.ms", "250ms");
    p.setProperty("cap.redis.timeout.ms", "3s");

    SendcapConfig c = SendcapConfig.from(p, "app.properties");

    assertThat(c.maxSkew()).isEqualTo(Duration.ofDays(30));
    assertThat(c.limiter().idempotencyRetention()).isEqualTo(Duration.ofDays(31));
    assertThat(c.batch().maxWait()).isEqualTo(Duration.ofMillis(250));
    assertThat(c.limiter().timeout()).isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void theMaxSendSizeFollowsTheProducersMaxRequestSizeAndMayNotExceedIt() {
    Properties larger = new Properties();
    larger.setProperty("producer.max.request.size", "2097152");
    Properties set = new Properties();
    set.setProperty("cap.max-send-bytes", "500000");
    Properties tooLarge = new Properties();
    tooLarge.setProperty("cap.max-send-bytes", "1048576");

    assertThat(SendcapConfig.from(new Properties(), "app.properties").maxSendBytes())
        .isEqualTo(1_048_576 - SendcapConfig.OUTPUT_HEADROOM_BYTES);
    assertThat(SendcapConfig.from(larger, "app.properties").maxSendBytes())
        .isEqualTo(2_097_152 - SendcapConfig.OUTPUT_HEADROOM_BYTES);
    assertThat(SendcapConfig.from(set, "app.properties").maxSendBytes()).isEqualTo(500_000);
    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(tooLarge, "app.properties"));
    assertThat(e.problems())
        .singleElement(as(InstanceOfAssertFactories.STRING))
        .startsWith(
            "cap.max-send-bytes=\"1048576\" is invalid: auto or a whole number from 1 to 1032192:"
                + " the producer's max.request.size (1048576) less 16384 bytes");
  }

  @Test
  void aValueGivenWithSetIsNamedAsSuch(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("app.properties");
    Files.writeString(file, "cap.mode=loud\n");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class,
            () -> SendcapConfig.load(file, Map.of("cap.mod", "shadow", "cap.clock", "sundial")));

    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "cap.mode=\"loud\" is invalid: one of enforce, shadow",
            "--set cap.mod is invalid: unknown key; see config/sendcap.properties",
            "--set cap.clock=\"sundial\" is invalid: one of wall, event");
  }

  @Test
  void aRedisPasswordIsHiddenWhereverTheUriIsShown() {
    Properties p = new Properties();
    p.setProperty(
        "cap.redis.uri", "rediss://sendcap:s3cret@redis-a:6380,rediss://:s3cret@redis-b:6380");
    p.setProperty("cap.redis.cluster", "true");

    SendcapConfig c = SendcapConfig.from(p, "app.properties");

    assertThat(c.limiter().where())
        .isEqualTo("[rediss://sendcap:[hidden]@redis-a:6380, rediss://:[hidden]@redis-b:6380]");
    assertThat(c.limiter().toString()).doesNotContain("s3cret");
    assertThat(c.describe()).contains("cap.redis.uri=rediss://[hidden]@").doesNotContain("s3cret");
  }

  @Test
  void aSentinelUriWithItsPasswordHiddenNamesOneStandaloneMaster() {
    Properties p = new Properties();
    p.setProperty(
        "cap.redis.uri", "redis-sentinel://s3cret@sentinel-a:26379,sentinel-b:26379/0#sendcap");

    SendcapConfig c = SendcapConfig.from(p, "app.properties");

    assertThat(c.limiter().uris())
        .containsExactly("redis-sentinel://s3cret@sentinel-a:26379,sentinel-b:26379/0#sendcap");
    assertThat(c.limiter().where())
        .isEqualTo("[redis-sentinel://[hidden]@sentinel-a:26379,sentinel-b:26379/0#sendcap]");
    assertThat(c.limiter().toString()).doesNotContain("s3cret");
    assertThat(c.describe()).doesNotContain("s3cret");
  }

  @Test
  void aPasswordWithoutAUserIsHiddenToo() {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", "redis://s3cret@redis:6379");

    SendcapConfig c = SendcapConfig.from(p, "app.properties");

    assertThat(c.limiter().where()).isEqualTo("[redis://[hidden]@redis:6379]");
    assertThat(c.describe()).doesNotContain("s3cret");
  }

  @Test
  void aSentinelUriOnAClusterOrWithoutAMasterNameIsRefusedNamingKeyAndValue() {
    Properties cluster = new Properties();
    cluster.setProperty("cap.redis.uri", "redis-sentinel://user:s3cret@sentinel:26379#sendcap");
    cluster.setProperty("cap.redis.cluster", "true");
    Properties unnamed = new Properties();
    unnamed.setProperty("cap.redis.uri", "redis-sentinel://sentinel:26379");

    InvalidConfigException onCluster =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(cluster, "app.properties"));
    InvalidConfigException noMaster =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(unnamed, "app.properties"));

    assertThat(onCluster.problems())
        .containsExactly(
            "cap.redis.uri=\"redis-sentinel://user:[hidden]@sentinel:26379#sendcap\" is invalid:"
                + " a redis-sentinel:// URI names a standalone master, which needs"
                + " cap.redis.cluster=false; with cap.redis.cluster=true, redis:// or rediss://"
                + " seed nodes (a Redis Cluster fails over by itself, without Sentinel)");
    assertThat(noMaster.problems())
        .containsExactly(
            "cap.redis.uri=\"redis-sentinel://sentinel:26379\" is invalid:"
                + " redis-sentinel://[PASSWORD@]host:port[,host:port...][/DB]#MASTER (Sentinel's"
                + " address and the name it monitors the master under)");
  }

  @Test
  void aRedisTrustStoreThatDoesNotOpenFailsStartUpNamingTheKey(@TempDir Path dir)
      throws IOException {
    Path notAStore = Files.writeString(dir.resolve("store.p12"), "not a key store");
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", "rediss://sendcap:s3cret@redis:6380");
    p.setProperty("cap.redis.ssl.truststore.location", notAStore.toString());
    p.setProperty("cap.redis.ssl.truststore.password", "s3cret");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties"));

    assertThat(e.problems())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("cap.redis.ssl.truststore.location=\"" + notAStore + "\" is invalid:")
        .contains("PKCS12 or JKS trust store that opens with cap.redis.ssl.truststore.password")
        .doesNotContain("s3cret");
  }

  @Test
  void theShippedFileHoldsTheDefaults() {
    SendcapConfig fromFile = SendcapConfig.load(Path.of("config/sendcap.properties"));
    SendcapConfig defaults = SendcapConfig.from(new Properties(), "none");
    assertThat(fromFile.topics()).isEqualTo(defaults.topics());
    assertThat(fromFile.limiter()).isEqualTo(defaults.limiter());
    assertThat(fromFile.batch()).isEqualTo(defaults.batch());
    assertThat(fromFile.streams()).isEqualTo(defaults.streams());
    assertThat(fromFile.maxSkew()).isEqualTo(defaults.maxSkew()).isEqualTo(Duration.ofDays(7));
    assertThat(fromFile.writerSchemas()).isEqualTo(defaults.writerSchemas()).isEmpty();
    assertThat(fromFile.avroSerde()).isEqualTo(defaults.avroSerde()).isEqualTo("single-object");
    assertThat(fromFile.schemaRegistry()).isEqualTo(defaults.schemaRegistry()).isEmpty();
    assertThat(fromFile.httpPort()).isEqualTo(defaults.httpPort()).isEqualTo(8080);
    assertThat(fromFile.liveness())
        .isEqualTo(defaults.liveness())
        .isEqualTo(new SendcapConfig.Liveness(5, Duration.ofMinutes(10)));
    assertThat(defaults.streams().getProperty("processing.guarantee")).isEqualTo("exactly_once_v2");
    assertThat(defaults.batch())
        .isEqualTo(new SendcapConfig.Batch(500, Duration.ofMillis(50), 1, 4000, 64 << 20));
    assertThat(defaults.limiter().failureMode()).isEqualTo(SendcapConfig.FailureMode.BLOCK);
  }

  @Test
  void usersShareHashTagsByDefaultOnAClusterOnly() {
    Properties p = new Properties();
    assertThat(SendcapConfig.from(p, "none").limiter().keyBuckets()).isZero();
    p.setProperty("cap.redis.cluster", "true");
    assertThat(SendcapConfig.from(p, "none").limiter().keyBuckets()).isEqualTo(32);
    p.setProperty("cap.redis.key-buckets", "0");
    assertThat(SendcapConfig.from(p, "none").limiter().keyBuckets()).isZero();
  }

  @Test
  void aTaskHoldsEightBatchesOfSendsByDefaultAndAtLeastOne() {
    Properties p = new Properties();
    p.setProperty("batch.max.records", "300");
    assertThat(SendcapConfig.from(p, "none").batch().maxPending()).isEqualTo(2400);
    p.setProperty("batch.max.pending", "300");
    assertThat(SendcapConfig.from(p, "none").batch().maxPending()).isEqualTo(300);
    p.setProperty("batch.max.pending", "299");
    assertThatThrownBy(() -> SendcapConfig.from(p, "app.properties"))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining(
            "batch.max.pending=\"299\" is invalid: auto (8 times batch.max.records) or a whole"
                + " number from batch.max.records (300) to 1000000");
  }

  @Test
  void aTaskHoldsAtLeastOneSendsBytesAndAsManyAsTheLargestSendAllowsByDefault() {
    Properties p = new Properties();
    p.setProperty("cap.max-send-bytes", "100000");
    p.setProperty("batch.max.pending-bytes", "100000");
    assertThat(SendcapConfig.from(p, "none").batch().maxBatchBytes()).isEqualTo(12500);
    p.setProperty("batch.max.pending-bytes", "99999");
    assertThatThrownBy(() -> SendcapConfig.from(p, "app.properties"))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining(
            "batch.max.pending-bytes=\"99999\" is invalid: auto (67108864, or cap.max-send-bytes if"
                + " more) or a whole number from cap.max-send-bytes (100000) to 2147483647, so that"
                + " a task can hold one send");
    Properties large = new Properties();
    large.setProperty("producer.max.request.size", String.valueOf(100 << 20));
    assertThat(SendcapConfig.from(large, "none").batch().maxPendingBytes())
        .as("auto: cap.max-send-bytes, raised past 64 MiB with the producer's limit")
        .isEqualTo(SendcapConfig.from(large, "none").maxSendBytes())
        .isGreaterThan(64 << 20);
  }

  @Test
  void theBoundsOfWriterSchemasAndSendsAreSettingsCheckedAtStartUp() {
    Properties p = new Properties();
    assertThat(SendcapConfig.from(p, "none").avroLimits())
        .isEqualTo(new io.sendcap.serde.AvroLimits(1_048_576, 64));
    p.setProperty("avro.max-depth", "0");
    p.setProperty("avro.max-schema-bytes", "1GB");
    assertThatThrownBy(() -> SendcapConfig.from(p, "app.properties"))
        .isInstanceOf(InvalidConfigException.class)
        .hasMessageContaining("avro.max-depth=\"0\" is invalid: a whole number from 1 to 1000")
        .hasMessageContaining(
            "avro.max-schema-bytes=\"1GB\" is invalid: a whole number from 1 to 67108864");
  }

  @Test
  void badValuesAreAllReportedNamingKeyValueAndWhatIsAllowed(@TempDir Path dir) throws IOException {
    Path other = dir.resolve("Other.avsc");
    Files.writeString(other, "{\"type\": \"record\", \"name\": \"Other\", \"fields\": []}");
    Properties p = new Properties();
    p.setProperty("cap.redis.failure-mode", "ignore");
    p.setProperty("batch.max.records", "0");
    p.setProperty("cap.redis.uri", "localhost:6379");
    p.setProperty("cap.clok", "event");
    p.setProperty("processing.guarantee", "exactly_twice");
    p.setProperty("cap.max-skew.ms", "-1");
    p.setProperty("http.port", "70000");
    p.setProperty("avro.writer-schemas", other + ",no/such.avsc");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties"));

    assertThat(e.problems())
        .contains(
            "cap.clok is invalid: unknown key; see config/sendcap.properties",
            "cap.redis.failure-mode=\"ignore\" is invalid: one of block, allow, suppress",
            "batch.max.records=\"0\" is invalid: a whole number from 1 to 100000",
            "cap.redis.uri=\"localhost:6379\" is invalid: redis://host:port or rediss://host:port,"
                + " comma-separated, or redis-sentinel://[PASSWORD@]host:port[,host:port...][/DB]"
                + "#MASTER (Sentinel's address and the name it monitors the master under)",
            "cap.max-skew.ms=\"-1\" is invalid: " + DURATION,
            "http.port=\"70000\" is invalid: a whole number from -1 to 65535",
            "avro.writer-schemas=\""
                + other
                + "\" is invalid: schemas of"
                + " io.sendcap.avro.ScheduledSend only");
    assertThat(e.problems())
        .anySatisfy(m -> assertThat(m).startsWith("avro.writer-schemas=\"no/such.avsc\""));
    assertThat(e.problems())
        .anySatisfy(m -> assertThat(m).contains("exactly_twice").contains("processing.guarantee"));
  }

  @Test
  void badLivenessValuesFailNamingKeyValueAndWhatIsAllowed() {
    Properties p = new Properties();
    p.setProperty("health.live.max-thread-replacements", "-1");
    p.setProperty("health.live.replacement-window.ms", "10 minutes");
    p.setProperty("health.live.max-replacements", "2");

    InvalidConfigException e =
        catchThrowableOfType(
            InvalidConfigException.class, () -> SendcapConfig.from(p, "app.properties"));

    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "health.live.max-thread-replacements=\"-1\" is invalid: a whole number from 0 to"
                + " 1000000",
            "health.live.replacement-window.ms=\"10 minutes\" is invalid: " + DURATION,
            "health.live.max-replacements is invalid: unknown key; see"
                + " config/sendcap.properties");
  }

  @Test
  void livenessSettingsAreReadAndNotPassedToKafkaStreams() {
    Properties p = new Properties();
    p.setProperty("health.live.max-thread-replacements", "0");
    p.setProperty("health.live.replacement-window.ms", "60000");

    SendcapConfig c = SendcapConfig.from(p, "x");

    assertThat(c.liveness()).isEqualTo(new SendcapConfig.Liveness(0, Duration.ofMinutes(1)));
    assertThat(c.streams()).doesNotContainKey("health.live.max-thread-replacements");
  }

  @Test
  void theSettingsLineHidesSecrets() {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", "rediss://default:hunter2@redis.example:6380");
    p.setProperty(
        "sasl.jaas.config",
        "org.apache.kafka.common.security.plain.PlainLoginModule"
            + " required username=\"u\" password=\"hunter2\";");
    p.setProperty("ssl.truststore.password", "hunter2");

    String line = SendcapConfig.from(p, "x").describe();

    assertThat(line)
        .doesNotContain("hunter2")
        .contains("cap.redis.uri=rediss://[hidden]@redis.example:6380")
        .contains("sasl.jaas.config=[hidden]")
        .contains("ssl.truststore.password=[hidden]")
        .contains("processing.guarantee=exactly_once_v2")
        .contains("batch.max.records=500");
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

  @Test
  void aRedisTimeoutThatCouldOutlastTheTransactionFailsStartUp() {
    Properties p = new Properties();
    p.setProperty("cap.redis.timeout.ms", "5000");

    InvalidConfigException e =
        catchThrowableOfType(InvalidConfigException.class, () -> SendcapConfig.from(p, "app"));

    assertThat(e.problems())
        .containsExactly(
            "cap.redis.timeout.ms=\"5000\" is invalid: at most 4500: a flush may wait twice this"
                + " for Redis, which with commit.interval.ms=1000 must stay below the producer's"
                + " transaction.timeout.ms=10000 under exactly_once_v2 (raise"
                + " producer.transaction.timeout.ms, up to the broker's"
                + " transaction.max.timeout.ms, to allow more)");
    p.setProperty("producer.transaction.timeout.ms", "60000");
    assertThat(SendcapConfig.from(p, "app").limiter().timeout()).hasMillis(5000);
    p.remove("producer.transaction.timeout.ms");
    p.setProperty("processing.guarantee", "at_least_once");
    assertThat(SendcapConfig.from(p, "app").limiter().timeout()).hasMillis(5000);
  }

  @Test
  void theConfluentSerdeRequiresASchemaRegistryUrl() {
    Properties p = new Properties();
    p.setProperty("avro.serde", "confluent");

    InvalidConfigException e =
        catchThrowableOfType(InvalidConfigException.class, () -> SendcapConfig.from(p, "app"));

    assertThat(e.problems())
        .containsExactly(
            "schema.registry.url=(missing) is invalid: one or more comma-separated http:// or"
                + " https:// URLs of a schema registry with the Confluent-compatible API, required"
                + " by avro.serde=confluent");
  }

  @Test
  void schemaRegistrySettingsAreSendcapsOwnValidatedAndGoToTheSerdeOnly() {
    Properties p = new Properties();
    p.setProperty("avro.serde", "confluent");
    p.setProperty("schema.registry.url", "https://registry-1:8081, https://registry-2:8081");
    p.setProperty("schema.registry.basic.auth.user.info", "sendcap:hunter2");
    p.setProperty("auto.register.schemas", "false");

    SendcapConfig c = SendcapConfig.from(p, "x");

    assertThat(c.avroSerde()).isEqualTo(SendcapConfig.CONFLUENT);
    assertThat(c.schemaRegistry())
        .containsOnlyKeys(
            "schema.registry.url", "schema.registry.basic.auth.user.info", "auto.register.schemas");
    assertThat(c.streams())
        .doesNotContainKeys(
            "schema.registry.url", "schema.registry.basic.auth.user.info", "auto.register.schemas");
    assertThat(c.describe())
        .doesNotContain("hunter2")
        .contains("schema.registry.basic.auth.user.info=[hidden]")
        .contains("schema.registry.url=https://registry-1:8081, https://registry-2:8081")
        .contains("auto.register.schemas=false")
        .contains("schema.registry.request.timeout.ms=5000");
  }

  @Test
  void badSchemaRegistryValuesFailNamingKeyValueAndWhatIsAllowed() {
    Properties p = new Properties();
    p.setProperty("avro.serde", "confluent");
    p.setProperty("schema.registry.url", "registry:8081");
    p.setProperty("schema.registry.ulr", "http://registry:8081");
    p.setProperty("auto.register.schemas", "no");
    p.setProperty("schema.registry.basic.auth.user.info", "hunter2");

    InvalidConfigException e =
        catchThrowableOfType(InvalidConfigException.class, () -> SendcapConfig.from(p, "app"));

    assertThat(e.problems())
        .containsExactlyInAnyOrder(
            "schema.registry.ulr is invalid: unknown key; see" + " config/sendcap.properties",
            "schema.registry.url=\"registry:8081\" is invalid: http://host:port or"
                + " https://host:port, optionally with a path, comma-separated; credentials go in"
                + " schema.registry.basic.auth.user.info",
            "schema.registry.basic.auth.user.info=\"[hidden]\" is invalid: user:password",
            "auto.register.schemas=\"no\" is invalid: true or false");
    assertThat(e.getMessage()).doesNotContain("hunter2");
  }

  @Test
  void aSerdeClassGetsTheSchemaRegistryKeysAsTheyAre() {
    Properties p = new Properties();
    p.setProperty("avro.serde", "io.confluent.kafka.streams.serdes.avro.SpecificAvroSerde");
    p.setProperty("schema.registry.url", "http://registry:8081");
    p.setProperty("schema.registry.ssl.endpoint.identification.algorithm", "");

    SendcapConfig c = SendcapConfig.from(p, "x");

    assertThat(c.schemaRegistry())
        .containsEntry("schema.registry.url", "http://registry:8081")
        .containsKey("schema.registry.ssl.endpoint.identification.algorithm");
    assertThat(c.streams()).doesNotContainKey("schema.registry.url");
  }
}
