package io.sendcap.config;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.serde.AvroSerdes;
import io.sendcap.serde.SchemaRegistrySettings;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.apache.avro.Schema;
import org.apache.avro.SchemaParseException;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The application's settings, read and validated once at start-up.
 *
 * <p>Keys under {@code topic.}, {@code cap.}, {@code batch.}, {@code policies.}, {@code segments.},
 * {@code avro.}, {@code http.}, {@code health.} and {@code schema.registry.}, and {@code
 * auto.register.schemas}, are sendcap's own; every other key is a Kafka Streams or client property
 * and is passed to Kafka Streams as it is. The schema registry's keys go to the Avro serde only:
 * with {@code avro.serde=confluent} sendcap validates them, with a serde class name they are that
 * class's to validate. {@code config/sendcap.properties} lists every key with its default.
 *
 * @param streams the Kafka Streams properties, sendcap's defaults applied
 * @param topics the topic names
 * @param policiesFile the policy file, used until a version is published on {@code topic.policies}
 * @param segmentsLoadTimeout how long start-up waits for every segment the policies name
 * @param limiter the settings of the Redis limiter
 * @param mode whether capped sends are suppressed ({@code enforce}) or delivered all the same and
 *     only reported on the suppressed topic ({@code shadow})
 * @param batch when a task's micro-batch is flushed
 * @param avroSerde {@code single-object}, {@code confluent}, or the class name of a Kafka {@code
 *     Serde} for Avro
 * @param writerSchemas other versions of sendcap's schemas that producers may write with (read by
 *     the {@code single-object} serde; a registry-backed serde finds them itself)
 * @param schemaRegistry the schema registry settings as set ({@code schema.registry.*} and {@code
 *     auto.register.schemas}), for the Avro serde; valid when {@code avro.serde=confluent}
 * @param httpPort the port of the metrics and health endpoint: 0 for a free one, -1 for none
 * @param liveness when {@code /health/live} fails for stream threads that keep failing
 * @param effective every setting as in force, defaults applied, by key (sorted)
 */
public record SendcapConfig(
    Properties streams,
    Topics topics,
    Path policiesFile,
    Duration segmentsLoadTimeout,
    Limiter limiter,
    Mode mode,
    Batch batch,
    String avroSerde,
    List<Schema> writerSchemas,
    Map<String, String> schemaRegistry,
    int httpPort,
    Liveness liveness,
    Map<String, String> effective) {

  /** The default of {@code avro.serde}: Avro single-object encoding, no schema registry. */
  public static final String SINGLE_OBJECT = AvroSerdes.SINGLE_OBJECT;

  /** {@code avro.serde} for the Confluent wire format with a schema registry. */
  public static final String CONFLUENT = AvroSerdes.CONFLUENT;

  /** The default of {@code http.port}. */
  public static final int DEFAULT_HTTP_PORT = 8080;

  /**
   * How far a send's {@code scheduledAt} may lie from its record's timestamp ({@code
   * cap.max-skew.ms}); see {@link Limiter#maxSkew()}.
   */
  public Duration maxSkew() {
    return limiter.maxSkew();
  }

  private static final Set<String> OWN_PREFIXES =
      Set.of(
          "topic.",
          "cap.",
          "batch.",
          "policies.",
          "segments.",
          "avro.",
          "http.",
          "health.",
          "schema.registry.");

  /** sendcap's own keys outside its prefixes: Confluent's name for it. */
  private static final Set<String> OWN_KEYS = Set.of(SchemaRegistrySettings.AUTO_REGISTER);

  /**
   * What the Kafka Streams properties default to when the file does not set them. The global
   * processing-handler switch is deprecated because Kafka 5.0 makes it the default; until then,
   * Kafka Streams warns at every start that it is off.
   */
  @SuppressWarnings("deprecation")
  private static final Map<String, String> STREAMS_DEFAULTS =
      Map.of(
          StreamsConfig.APPLICATION_ID_CONFIG, "sendcap",
          StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2,
          StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092",
          StreamsConfig.PROCESSING_EXCEPTION_HANDLER_GLOBAL_ENABLED_CONFIG, "true");

  /** Topic names. */
  public record Topics(
      String input,
      String deliveries,
      String suppressed,
      String deadLetters,
      String segments,
      String policies) {}

  /**
   * The liveness rule for stream threads that keep failing: {@code /health/live} fails, for good,
   * once more than {@code maxThreadReplacements} failed stream threads were replaced within {@code
   * replacementWindow}.
   */
  public record Liveness(int maxThreadReplacements, Duration replacementWindow) {}

  /** What a capped send becomes. */
  public enum Mode {
    /** Suppressed: it goes to the suppressed topic only. */
    ENFORCE,
    /**
     * Delivered all the same, and also written to the suppressed topic marked as shadow: a policy
     * tried on live traffic before it is enforced.
     */
    SHADOW
  }

  /** When a task flushes its micro-batch: at {@code maxRecords} or after {@code maxWait}. */
  public record Batch(int maxRecords, Duration maxWait) {}

  /** What a send is checked against when Redis cannot be reached. */
  public enum FailureMode {
    /** Retry with backoff and decide nothing until Redis answers: nothing lost. */
    BLOCK,
    /** Deliver unchecked, marked fail-open. */
    ALLOW,
    /** Suppress with reason LIMITER_UNAVAILABLE. */
    SUPPRESS
  }

  /** Which time a decision is made at. */
  public enum Clock {
    /** The instance's wall clock. */
    WALL,
    /** The send's {@code scheduledAt}: deterministic replays and tests. */
    EVENT
  }

  /**
   * Settings of the Redis limiter.
   *
   * @param uris the Redis URIs: one for standalone, one or more seeds for a cluster
   * @param cluster whether the URIs name a Redis Cluster
   * @param keyPrefix the prefix of every key sendcap writes
   * @param timeout how long one pipelined batch may take before Redis counts as unreachable
   * @param failureMode what happens while Redis is unreachable
   * @param clock which time decisions are made at
   * @param idempotencyRetention how long a logged send is kept at least, even when it has left
   *     every window, so that a replay of it within this time is recognised and not counted again
   * @param sendsPerCall how many sends one script call decides at most
   * @param globalLease how long an instance holds tokens of a global cap before unused ones go back
   * @param maxSkew how far a send's {@code scheduledAt} may lie from its record's timestamp, and
   *     under the event clock behind the newest record timestamp of its partition; a send beyond it
   *     goes to the dead-letter topic
   */
  public record Limiter(
      List<String> uris,
      boolean cluster,
      String keyPrefix,
      Duration timeout,
      FailureMode failureMode,
      Clock clock,
      Duration idempotencyRetention,
      int sendsPerCall,
      Duration globalLease,
      Duration maxSkew) {
    /** Creates the settings; the list is copied. */
    public Limiter {
      uris = List.copyOf(uris);
    }
  }

  /** Reads and validates a properties file. */
  public static SendcapConfig load(Path file) {
    return load(file, Map.of());
  }

  /** Reads a properties file, applies {@code overrides} on top of it, and validates the result. */
  public static SendcapConfig load(Path file, Map<String, String> overrides) {
    Properties props = new Properties();
    try (var reader = Files.newBufferedReader(file)) {
      props.load(reader);
    } catch (IOException e) {
      throw new InvalidConfigException(
          file.toString(), List.of("cannot read the configuration: " + e.getMessage()));
    }
    props.putAll(overrides);
    return from(props, file.toString());
  }

  /** Validates properties, reporting every invalid value at once; {@code source} names them. */
  public static SendcapConfig from(Properties props, String source) {
    Values r = new Values(props, new Problems(source));
    Topics topics =
        new Topics(
            r.string("topic.input", "campaign-sends"),
            r.string("topic.deliveries", "deliveries"),
            r.string("topic.suppressed", "suppressed"),
            r.string("topic.dlq", "campaign-sends-dlq"),
            r.string("topic.segments", "segments"),
            r.string("topic.policies", "policies"));
    Limiter limiter =
        new Limiter(
            r.redisUris("cap.redis.uri", "redis://localhost:6379"),
            r.bool("cap.redis.cluster", false),
            r.string("cap.redis.key-prefix", "s"),
            r.millis("cap.redis.timeout.ms", 4_000),
            r.choice("cap.redis.failure-mode", FailureMode.BLOCK),
            r.choice("cap.clock", Clock.WALL),
            r.millis("cap.idempotency.retention.ms", 86_400_000),
            r.intRange("cap.redis.sends-per-call", 16, 1, 1000),
            r.millis("cap.global.lease.ms", 5_000),
            r.millis("cap.max-skew.ms", 604_800_000));
    Mode mode = r.choice("cap.mode", Mode.ENFORCE);
    Batch batch =
        new Batch(
            r.intRange("batch.max.records", 500, 1, 100_000), r.millis("batch.max.wait.ms", 50));
    Path policies = Path.of(r.string("policies.file", "config/policies.yaml"));
    Duration segments = r.millis("segments.load.timeout.ms", 120_000);
    String serde = r.string("avro.serde", SINGLE_OBJECT);
    List<Schema> writerSchemas = r.schemas("avro.writer-schemas");
    Map<String, String> schemaRegistry = r.schemaRegistry(serde);
    int httpPort = r.intRange("http.port", DEFAULT_HTTP_PORT, -1, 65_535);
    Liveness liveness =
        new Liveness(
            r.intRange("health.live.max-thread-replacements", 5, 0, 1_000_000),
            r.millis("health.live.replacement-window.ms", 600_000));
    Properties streams = r.streams();
    r.withinTheTransaction(limiter.timeout(), streams);
    r.problems.throwIfAny();
    return new SendcapConfig(
        streams,
        topics,
        policies,
        segments,
        limiter,
        mode,
        batch,
        serde,
        writerSchemas,
        schemaRegistry,
        httpPort,
        liveness,
        Collections.unmodifiableMap(r.effective));
  }

  /**
   * The settings in force as one line of {@code key=value} pairs, sorted, with secrets masked: the
   * values of keys that name a password, secret, token, JAAS configuration or user info, and the
   * user info of URIs. For the start-up log.
   */
  public String describe() {
    StringBuilder line = new StringBuilder();
    effective.forEach(
        (key, value) -> {
          if (line.length() > 0) {
            line.append(", ");
          }
          line.append(key)
              .append('=')
              .append(SECRET_KEY.matcher(key).find() ? "[hidden]" : unlessUserInfo(value));
        });
    return line.toString();
  }

  private static final Pattern SECRET_KEY =
      Pattern.compile("(?i)password|secret|token|jaas|user\\.info|credentials");
  private static final Pattern USER_INFO = Pattern.compile("(\\w+://)[^@/,]*@");

  private static String unlessUserInfo(String value) {
    return USER_INFO.matcher(value).replaceAll("$1[hidden]@");
  }

  /** Reads typed values, recording a problem for each invalid one and for unknown own keys. */
  private static final class Values {
    private static final Set<String> KNOWN =
        Set.of(
            "topic.input",
            "topic.deliveries",
            "topic.suppressed",
            "topic.dlq",
            "cap.redis.uri",
            "cap.redis.cluster",
            "cap.redis.key-prefix",
            "cap.redis.timeout.ms",
            "cap.redis.failure-mode",
            "cap.max-skew.ms",
            "avro.writer-schemas",
            "http.port",
            "health.live.max-thread-replacements",
            "health.live.replacement-window.ms",
            "cap.clock",
            "cap.idempotency.retention.ms",
            "cap.redis.sends-per-call",
            "batch.max.records",
            "batch.max.wait.ms",
            "policies.file",
            "topic.segments",
            "topic.policies",
            "cap.mode",
            "cap.global.lease.ms",
            "segments.load.timeout.ms",
            "avro.serde",
            SchemaRegistrySettings.URL,
            SchemaRegistrySettings.USER_INFO,
            SchemaRegistrySettings.TRUSTSTORE_LOCATION,
            SchemaRegistrySettings.TRUSTSTORE_PASSWORD,
            SchemaRegistrySettings.KEYSTORE_LOCATION,
            SchemaRegistrySettings.KEYSTORE_PASSWORD,
            SchemaRegistrySettings.KEY_PASSWORD,
            SchemaRegistrySettings.REQUEST_TIMEOUT,
            SchemaRegistrySettings.AUTO_REGISTER);

    private final Properties props;
    private final Problems problems;
    private final Map<String, String> effective = new TreeMap<>();

    Values(Properties props, Problems problems) {
      this.props = props;
      this.problems = problems;
      // A Serde class named by avro.serde reads the schema registry's keys: they are its to check.
      String serde = props.getProperty("avro.serde", SINGLE_OBJECT).trim();
      boolean serdeClass = !serde.equals(SINGLE_OBJECT) && !serde.equals(CONFLUENT);
      for (String key : new TreeMap<>(props).keySet().stream().map(String::valueOf).toList()) {
        if (isOwn(key) && !KNOWN.contains(key) && !(serdeClass && isSchemaRegistry(key))) {
          problems.add(key, props.getProperty(key), "unknown key; see config/sendcap.properties");
        }
      }
    }

    private static boolean isOwn(String key) {
      return OWN_PREFIXES.stream().anyMatch(key::startsWith) || OWN_KEYS.contains(key);
    }

    private static boolean isSchemaRegistry(String key) {
      return key.startsWith("schema.registry.") || OWN_KEYS.contains(key);
    }

    /**
     * The schema registry's settings as set, for the Avro serde. Under {@code avro.serde=confluent}
     * they are validated ({@code schema.registry.url} is required) and their defaults shown in the
     * settings line.
     */
    Map<String, String> schemaRegistry(String serde) {
      Map<String, String> settings = new TreeMap<>();
      for (String key : props.stringPropertyNames()) {
        if (isSchemaRegistry(key)) {
          settings.put(key, props.getProperty(key).trim());
        }
      }
      if (serde.equals(CONFLUENT)) {
        SchemaRegistrySettings.problems(settings).forEach(problems::add);
        effective.put(
            SchemaRegistrySettings.AUTO_REGISTER,
            settings.getOrDefault(SchemaRegistrySettings.AUTO_REGISTER, "true"));
        effective.put(
            SchemaRegistrySettings.REQUEST_TIMEOUT,
            settings.getOrDefault(
                SchemaRegistrySettings.REQUEST_TIMEOUT,
                String.valueOf(SchemaRegistrySettings.DEFAULT_REQUEST_TIMEOUT_MS)));
      }
      effective.putAll(settings);
      return Collections.unmodifiableMap(settings);
    }

    String string(String key, String defaultValue) {
      String value = props.getProperty(key, defaultValue).trim();
      effective.put(key, value);
      if (value.isEmpty()) {
        problems.add(key, value, "a non-empty value");
        return defaultValue;
      }
      return value;
    }

    boolean bool(String key, boolean defaultValue) {
      String value = string(key, String.valueOf(defaultValue));
      if (!value.equals("true") && !value.equals("false")) {
        problems.add(key, value, "true or false");
        return defaultValue;
      }
      return Boolean.parseBoolean(value);
    }

    int intRange(String key, int defaultValue, int min, int max) {
      String value = string(key, String.valueOf(defaultValue));
      try {
        int n = Integer.parseInt(value);
        if (n >= min && n <= max) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(key, value, "a whole number from " + min + " to " + max);
      return defaultValue;
    }

    Duration millis(String key, int defaultValue) {
      return Duration.ofMillis(intRange(key, defaultValue, 1, Integer.MAX_VALUE));
    }

    <E extends Enum<E>> E choice(String key, E defaultValue) {
      String value = string(key, name(defaultValue));
      for (E e : defaultValue.getDeclaringClass().getEnumConstants()) {
        if (name(e).equals(value)) {
          return e;
        }
      }
      List<String> allowed =
          Arrays.stream(defaultValue.getDeclaringClass().getEnumConstants())
              .map(Values::name)
              .toList();
      problems.add(key, value, "one of " + String.join(", ", allowed));
      return defaultValue;
    }

    private static String name(Enum<?> e) {
      return e.name().toLowerCase(Locale.ROOT);
    }

    List<String> redisUris(String key, String defaultValue) {
      List<String> uris = new ArrayList<>();
      for (String uri : string(key, defaultValue).split(",")) {
        String trimmed = uri.trim();
        if (validRedisUri(trimmed)) {
          uris.add(trimmed);
        } else {
          problems.add(key, trimmed, "redis://host:port or rediss://host:port, comma-separated");
        }
      }
      return uris;
    }

    private static boolean validRedisUri(String uri) {
      try {
        URI parsed = new URI(uri);
        return ("redis".equals(parsed.getScheme()) || "rediss".equals(parsed.getScheme()))
            && parsed.getHost() != null;
      } catch (URISyntaxException e) {
        return false;
      }
    }

    /** Parses a comma-separated list of {@code .avsc} files; empty when the key is not set. */
    List<Schema> schemas(String key) {
      String value = props.getProperty(key, "").trim();
      effective.put(key, value);
      List<Schema> schemas = new ArrayList<>();
      for (String file : value.isEmpty() ? new String[0] : value.split(",")) {
        try {
          Schema schema = new Schema.Parser().parse(Path.of(file.trim()).toFile());
          if (schema.getFullName().equals(ScheduledSend.SCHEMA$.getFullName())) {
            schemas.add(schema);
          } else {
            problems.add(
                key, file.trim(), "schemas of " + ScheduledSend.SCHEMA$.getFullName() + " only");
          }
        } catch (IOException | SchemaParseException e) {
          problems.add(key, file.trim(), "readable Avro schema files (.avsc): " + e.getMessage());
        }
      }
      return List.copyOf(schemas);
    }

    /**
     * Checks that a batch cannot hold its stream thread past the transaction timeout. One flush may
     * wait for the batch before it (its Redis calls share {@code cap.redis.timeout.ms}) and then
     * for the new batch's global-cap tokens (the same again); under exactly-once, that and the
     * commit interval must fit in the producer's {@code transaction.timeout.ms}, or the broker
     * aborts the transaction and fences the instance.
     */
    void withinTheTransaction(Duration redisTimeout, Properties streams) {
      StreamsConfig config;
      try {
        config = new StreamsConfig(streams);
      } catch (ConfigException e) {
        return; // reported by streams()
      }
      if (!StreamsConfig.EXACTLY_ONCE_V2.equals(
          config.getString(StreamsConfig.PROCESSING_GUARANTEE_CONFIG))) {
        return;
      }
      long commit = config.getLong(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG);
      long transaction =
          Long.parseLong(
              String.valueOf(
                  config
                      .getProducerConfigs("sendcap")
                      .get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG)));
      long most = (transaction - commit) / 2;
      if (redisTimeout.toMillis() > most) {
        problems.add(
            "cap.redis.timeout.ms",
            redisTimeout.toMillis(),
            "at most "
                + most
                + ": a flush may wait twice this for Redis, which with commit.interval.ms="
                + commit
                + " must stay below the producer's transaction.timeout.ms="
                + transaction
                + " under exactly_once_v2 (raise producer.transaction.timeout.ms, up to the"
                + " broker's transaction.max.timeout.ms, to allow more)");
      }
    }

    Properties streams() {
      Properties streams = new Properties();
      STREAMS_DEFAULTS.forEach(streams::setProperty);
      for (String key : props.stringPropertyNames()) {
        if (!isOwn(key)) {
          streams.setProperty(key, props.getProperty(key).trim());
        }
      }
      try {
        new StreamsConfig(streams);
      } catch (ConfigException e) {
        problems.add(e.getMessage());
      }
      streams.stringPropertyNames().forEach(k -> effective.put(k, streams.getProperty(k)));
      return streams;
    }
  }
}
