package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * docker-compose.yml read without Docker (ComposeIT starts it where a Docker engine runs): the
 * services sendcap is pointed at exist under those names and ports, the settings it is given are
 * keys the application knows with values it accepts, the topics and segments it needs are created
 * and published, the images are variables defaulting to the official ones, and its Schema Registry
 * is the one {@code embedded} runs.
 */
class DockerComposeTest {
  private static JsonNode services;
  private static List<String> sendcapCommand;
  private static SendcapConfig config;

  @BeforeAll
  static void read() throws IOException {
    JsonNode compose =
        new ObjectMapper(new YAMLFactory()).readTree(Path.of("docker-compose.yml").toFile());
    services = compose.path("services");
    sendcapCommand = strings(services.path("sendcap").path("command"));
    // The image holds the repository's config/ under its working directory.
    assertThat(option(sendcapCommand, "--config")).isEmpty();
    config = SendcapConfig.load(Path.of("config/sendcap.properties"), overrides());
  }

  @Test
  void hasKafkaInKraftModeRedisTopicCreationAndSendcapFromItsImage() {
    assertThat(services.fieldNames())
        .toIterable()
        .contains("kafka", "redis", "schema-registry", "topics", "segments", "sendcap");
    JsonNode kafka = services.path("kafka").path("environment");
    assertThat(kafka.path("KAFKA_PROCESS_ROLES").asText()).isEqualTo("broker,controller");
    assertThat(kafka.has("KAFKA_ZOOKEEPER_CONNECT")).isFalse();
    assertThat(sendcapCommand.get(0)).isEqualTo("run");
    assertThat(services.path("sendcap").has("volumes")).as("no checkout mounted").isFalse();
  }

  @Test
  void everyImageIsAVariableDefaultingToTheOfficialImageOfTheVersionsTheBuildUses()
      throws IOException {
    String pom = Files.readString(Path.of("pom.xml"));
    String kafka = "apache/kafka:" + pomProperty(pom, "kafka.version");
    String sendcap = "sendcap:" + pomVersion(pom);
    assertThat(image("kafka")).isEqualTo("${KAFKA_IMAGE:-" + kafka + "}");
    assertThat(image("topics")).isEqualTo(image("kafka"));
    assertThat(image("redis")).isEqualTo("${REDIS_IMAGE:-redis:7}");
    assertThat(image("sendcap")).isEqualTo("${SENDCAP_IMAGE:-" + sendcap + "}");
    assertThat(image("segments")).isEqualTo(image("sendcap"));
  }

  @Test
  void sendcapReachesKafkaAndRedisByTheirServiceNamesAndPorts() {
    URI bootstrap = URI.create("kafka://" + config.streams().getProperty("bootstrap.servers"));
    assertThat(bootstrap.getHost()).isEqualTo("kafka");
    JsonNode kafka = services.path("kafka").path("environment");
    assertThat(kafka.path("KAFKA_ADVERTISED_LISTENERS").asText())
        .startsWith("PLAINTEXT://kafka:" + bootstrap.getPort() + ",");
    assertThat(kafka.path("KAFKA_LISTENERS").asText())
        .contains("PLAINTEXT://:" + bootstrap.getPort());

    assertThat(config.limiter().uris()).hasSize(1);
    URI redis = URI.create(config.limiter().uris().get(0));
    assertThat(redis.getHost()).isEqualTo("redis");
    assertThat(redis.getPort()).isEqualTo(6379);
    assertThat(config.limiter().cluster()).isFalse();

    assertThat(strings(services.path("sendcap").path("ports")).get(0))
        .isEqualTo("127.0.0.1:${HTTP_PORT:-8080}:" + config.httpPort());
    assertThat(dependsOn("sendcap").fieldNames())
        .toIterable()
        .contains("segments", "redis", "schema-registry");
  }

  @Test
  void theHostReachesKafkaAtTheBootstrapServersOfTheConfigurationFile() throws IOException {
    SendcapConfig host = SendcapConfig.load(Path.of("config/sendcap.properties"), Map.of());
    URI bootstrap = URI.create("kafka://" + host.streams().getProperty("bootstrap.servers"));
    JsonNode kafka = services.path("kafka").path("environment");

    assertThat(kafka.path("KAFKA_ADVERTISED_LISTENERS").asText())
        .endsWith(",HOST://" + bootstrap.getHost() + ":${KAFKA_PORT:-" + bootstrap.getPort() + "}");
    assertThat(kafka.path("KAFKA_LISTENERS").asText()).contains("HOST://:9092");
    assertThat(strings(services.path("kafka").path("ports")))
        .containsExactly("127.0.0.1:${KAFKA_PORT:-" + bootstrap.getPort() + "}:9092");
  }

  @Test
  void theTopicsServiceCreatesEveryTopicSendcapNeedsBeforeItStarts() {
    SendcapConfig.Topics topics = config.topics();
    String script = strings(services.path("topics").path("command")).get(0);
    Matcher loop = Pattern.compile("for t in ([^;]+); do").matcher(script);
    assertThat(loop.find()).as(script).isTrue();

    assertThat(loop.group(1).trim().split("\\s+"))
        .containsExactlyInAnyOrder(
            topics.input(), topics.deliveries(), topics.suppressed(), topics.deadLetters());
    assertThat(script)
        .contains("--bootstrap-server " + config.streams().getProperty("bootstrap.servers"));
    assertThat(dependsOn("topics").path("kafka").path("condition").asText())
        .isEqualTo("service_healthy");
  }

  @Test
  void theSegmentsServicePublishesEverySegmentThePoliciesNameFromFilesThatExist() {
    String script = strings(services.path("segments").path("command")).get(0);
    Matcher loop = Pattern.compile("for s in ([^;]+); do").matcher(script);
    assertThat(loop.find()).as(script).isTrue();
    List<String> published = List.of(loop.group(1).trim().split("\\s+"));

    assertThat(published)
        .containsExactlyInAnyOrderElementsOf(Policies.load(config.policiesFile()).segmentNames());
    for (String segment : published) {
      assertThat(Path.of("config/segments/" + segment + ".ids")).isRegularFile();
    }
    assertThat(script)
        .contains(
            "bin/sendcap segments publish --set bootstrap.servers="
                + config.streams().getProperty("bootstrap.servers")
                + " --name $$s --ids config/segments/$$s.ids");
    assertThat(dependsOn("sendcap").path("segments").path("condition").asText())
        .isEqualTo("service_completed_successfully");
  }

  @Test
  void theSchemaRegistryIsTheApicurioVersionTheBuildUnpacksForEmbedded() throws IOException {
    Properties build = new Properties();
    try (InputStream in =
        DockerComposeTest.class.getResourceAsStream(
            "/io/sendcap/embedded/schema-registry.properties")) {
      build.load(in);
    }
    JsonNode registry = services.path("schema-registry");

    assertThat(image("schema-registry"))
        .isEqualTo(
            "${REGISTRY_IMAGE:-apicurio/apicurio-registry-mem:"
                + build.getProperty("version")
                + "}");
    assertThat(strings(registry.path("ports")))
        .containsExactly("127.0.0.1:${REGISTRY_PORT:-8081}:8080");
    assertThat(registry.path("environment").path("REGISTRY_RULES_GLOBAL_COMPATIBILITY").asText())
        .isEqualTo(EmbeddedRegistry.DEFAULT_COMPATIBILITY);
    assertThat(config.avroSerde()).isEqualTo("confluent");
    assertThat(overrides().get("schema.registry.url"))
        .isEqualTo("http://schema-registry:8080/apis/ccompat/v7");
  }

  private static String image(String service) {
    return services.path(service).path("image").asText();
  }

  private static String pomProperty(String pom, String name) {
    Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)<").matcher(pom);
    assertThat(m.find()).as(name).isTrue();
    return m.group(1);
  }

  private static String pomVersion(String pom) {
    // The top pom has no parent: its first version is the project's.
    Matcher m = Pattern.compile("<version>([^<]+)</version>").matcher(pom);
    assertThat(m.find()).isTrue();
    return m.group(1);
  }

  private static JsonNode dependsOn(String service) {
    return services.path(service).path("depends_on");
  }

  private static Map<String, String> overrides() {
    Map<String, String> sets = new LinkedHashMap<>();
    for (String set : option(sendcapCommand, "--set")) {
      int eq = set.indexOf('=');
      sets.put(set.substring(0, eq), set.substring(eq + 1));
    }
    return sets;
  }

  private static List<String> option(List<String> command, String name) {
    List<String> values = new ArrayList<>();
    for (int i = 0; i + 1 < command.size(); i++) {
      if (command.get(i).equals(name)) {
        values.add(command.get(i + 1));
      }
    }
    return values;
  }

  private static List<String> strings(JsonNode list) {
    return StreamSupport.stream(list.spliterator(), false).map(JsonNode::asText).toList();
  }
}
