package io.sendcap.config;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.serde.AvroLimits;
import io.sendcap.serde.AvroSerdes;
import io.sendcap.serde.SchemaRegistrySettings;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
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
 * @param segmentsMaxBytes the most bytes one segment's published bitmap may claim, and the most
 *     bytes of chunks that may wait for their manifests, all segments together
 * @param limiter the settings of the Redis limiter
 * @param mode whether capped sends are suppressed ({@code enforce}) or delivered all the same and
 *     only reported on the suppressed topic ({@code shadow})
 * @param batch when a task's micro-batch is flushed
 * @param avroSerde {@code single-object}, {@code confluent}, or the class name of a Kafka {@code
 *     Serde} for Avro
 * @param writerSchemas other versions of sendcap's schemas that producers may write with (read by
 *     the {@code single-object} serde; a registry-backed serde finds them itself)
 * @param avroLimits the bounds on writer schemas and records that the Avro serdes read
 * @param schemaRegistry the schema registry settings as set ({@code schema.registry.*} and {@code
 *     auto.register.schemas}), for the Avro serde; valid when {@code avro.serde=confluent}
 * @param httpHost the interface the metrics and health endpoint listens on ({@code 0.0.0.0}: all)
 * @param httpPort the port of the metrics and health endpoint: 0 for a free one, -1 for none
 * @param liveness when {@code /health/live} fails for stream threads that keep failing
 * @param brokerTimeout how long a command waits for the Kafka brokers before it gives up
 * @param maxSendBytes the most bytes of value and headers a send may have ({@code
 *     cap.max-send-bytes}): a larger one goes to the dead-letter topic before it is decided, as its
 *     delivery or suppression, which embeds it, could not be written
 * @param effective every setting as in force, defaults applied, by key (sorted)
 */
public record SendcapConfig(
    Properties streams,
    Topics topics,
    Path policiesFile,
    Duration segmentsLoadTimeout,
    int segmentsMaxBytes,
    Limiter limiter,
    Mode mode,
    Batch batch,
    String avroSerde,
    List<Schema> writerSchemas,
    AvroLimits avroLimits,
    Map<String, String> schemaRegistry,
    String httpHost,
    int httpPort,
    Liveness liveness,
    Duration brokerTimeout,
    int maxSendBytes,
    Map<String, String> effective) {

  /** The default of {@code avro.serde}: Avro single-object encoding, no schema registry. */
  public static final String SINGLE_OBJECT = AvroSerdes.SINGLE_OBJECT;

  /** {@code avro.serde} for the Confluent wire format with a schema registry. */
  public static final String CONFLUENT = AvroSerdes.CONFLUENT;

  /** The default of {@code http.port}. */
  public static final int DEFAULT_HTTP_PORT = 8080;

  /**
   * The bytes an output may need beyond the value and headers of the send it embeds: its key (at
   * most {@link #MAX_KEY_BYTES}), the decision's own fields and the record's framing in its batch.
   * {@code cap.max-send-bytes} is at most the producer's {@code max.request.size} less this.
   */
  public static final int OUTPUT_HEADROOM_BYTES = 16 * 1024;

  /**
   * The longest key a send may have, in bytes: a user id is a few, and the outputs carry the key of
   * their send, inside {@link #OUTPUT_HEADROOM_BYTES}.
   */
  public static final int MAX_KEY_BYTES = 4 * 1024;

  /** Kafka's default of the producer's {@code max.request.size}. */
  private static final int DEFAULT_MAX_REQUEST_SIZE = 1024 * 1024;

  /**
   * The largest record, in bytes before compression, that the producer of Kafka Streams properties
   * {@code streams} may write: {@code producer.max.request.size}, else {@code max.request.size},
   * else Kafka's default, 1 MiB.
   *
   * @throws NumberFormatException if the value set is not a whole number
   */
  public static int maxRequestBytes(Map<?, ?> streams) {
    Object value =
        streams.get(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG));
    if (value == null) {
      value = streams.get(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
    }
    return value == null
        ? DEFAULT_MAX_REQUEST_SIZE
        : Integer.parseInt(String.valueOf(value).trim());
  }

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
  private static final Set<String> OWN_KEYS =
      Set.of(SchemaRegistrySettings.AUTO_REGISTER, "broker.timeout.ms");

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

  /**
   * When a task flushes its micro-batch, how many of its batches may be on their way to Redis at
   * once, and how many sends it holds meanwhile.
   *
   * @param maxRecords a batch is flushed when it holds this many sends (if the task has room in
   *     flight) ...
   * @param maxWait ... or when its oldest send has waited this long
   * @param maxInFlight how many of a task's batches may be with Redis at once
   * @param maxPending the most sends a task holds unflushed while its batches in flight wait for
   *     Redis; at least {@code maxRecords}
   * @param maxPendingBytes the most bytes of sends (values and headers, as read) a task holds
   *     unflushed, as {@code maxPending} bounds them in sends; at least {@code cap.max-send-bytes},
   *     so that one send always fits
   */
  public record Batch(
      int maxRecords, Duration maxWait, int maxInFlight, int maxPending, int maxPendingBytes) {
    /**
     * How many batches' worth a task holds unflushed: of sends under {@code
     * batch.max.pending=auto}, of bytes always.
     */
    public static final int PENDING_BATCHES = 8;

    /**
     * A batch is flushed when its sends have this many bytes, as when it holds {@code maxRecords}
     * sends: {@code maxPendingBytes} / {@link #PENDING_BATCHES}, so that large sends do not wait
     * for {@code maxRecords} of them.
     */
    public long maxBatchBytes() {
      return maxPendingBytes / PENDING_BATCHES;
    }
  }

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
   * @param uris the Redis URIs: one for standalone (a {@code redis-sentinel://} URI for a master
   *     that Sentinel fails over), one or more seeds for a cluster
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
   * @param keyBuckets how many hash tags users' keys share ({@code PREFIX{TAG}USERID}), so that a
   *     script call on a cluster decides many sends; 0 for one tag per user ({@code
   *     PREFIX{USERID}})
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
      Duration maxSkew,
      int keyBuckets,
      Optional<Path> truststore,
      Optional<String> truststorePassword,
      int waitReplicas,
      Duration waitTimeout) {
    /** Creates the settings; the list is copied. */
    public Limiter {
      uris = List.copyOf(uris);
    }

    /** The Redis URIs with their passwords hidden, for messages and logs. */
    public String where() {
      return uris.stream()
          .map(SendcapConfig::hidePassword)
          .collect(Collectors.joining(", ", "[", "]"));
    }

    @Override
    public String toString() {
      return "Limiter" + where();
    }
  }

  /**
   * The password of a URI's user info: {@code user:password@}, {@code :password@}, or {@code
   * password@} (a user info without a colon is a password to Lettuce, as in {@code
   * redis-sentinel://password@host:port#master}). Group 1 is what stays shown.
   */
  private static final Pattern PASSWORD_IN_URI =
      Pattern.compile("([\\w+.-]+://(?:[^:@/,]*:)?)[^@/,]*@");

  /** Hides the password of every URI in {@code value}. */
  static String hidePassword(String value) {
    return PASSWORD_IN_URI.matcher(value).replaceAll("$1[hidden]@");
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
    return from(props, new Problems(file.toString(), overrides.keySet()), System::getenv);
  }

  /**
   * Validates properties, reporting every invalid value at once; {@code source} names them. Values
   * may name environment variables and files ({@code ${env:NAME}}, {@code ${file:PATH}}, {@code
   * ${file:PATH:KEY}}; see {@link ConfigReferences}).
   */
  public static SendcapConfig from(Properties props, String source) {
    return from(props, source, System::getenv);
  }

  /**
   * Validates properties as {@link #from(Properties, String)} does, with these environment
   * variables.
   */
  static SendcapConfig from(Properties props, String source, UnaryOperator<String> env) {
    return from(props, new Problems(source), env);
  }

  private static SendcapConfig from(
      Properties written, Problems problems, UnaryOperator<String> env) {
    Properties props = new ConfigReferences(env, problems).resolve(written);
    for (String key : props.stringPropertyNames()) {
      if (Settings.isSecret(key)) {
        problems.conceal(props.getProperty(key).trim());
      }
    }
    Values r = new Values(props, problems);
    Topics topics =
        new Topics(
            r.string("topic.input"),
            r.string("topic.deliveries"),
            r.string("topic.suppressed"),
            r.string("topic.dlq"),
            r.string("topic.segments"),
            r.string("topic.policies"));
    boolean cluster = r.bool("cap.redis.cluster");
    Limiter limiter =
        new Limiter(
            r.redisUris("cap.redis.uri", cluster),
            cluster,
            r.string("cap.redis.key-prefix"),
            r.duration("cap.redis.timeout.ms"),
            r.choice("cap.redis.failure-mode", FailureMode.class),
            r.choice("cap.clock", Clock.class),
            r.duration("cap.idempotency.retention.ms"),
            r.integer("cap.redis.sends-per-call"),
            r.duration("cap.global.lease.ms"),
            r.duration("cap.max-skew.ms"),
            r.keyBuckets("cap.redis.key-buckets", cluster),
            r.optionalString("cap.redis.ssl.truststore.location").map(Path::of),
            r.optionalString("cap.redis.ssl.truststore.password"),
            r.integer("cap.redis.wait-replicas"),
            r.duration("cap.redis.wait-timeout.ms"));
    r.requireTrustStore(
        "cap.redis.ssl.truststore.location",
        "cap.redis.ssl.truststore.password",
        limiter.truststore(),
        limiter.truststorePassword());
    if (limiter.waitReplicas() > 0 && limiter.waitTimeout().compareTo(limiter.timeout()) >= 0) {
      problems.add(
          "cap.redis.wait-timeout.ms",
          limiter.waitTimeout().toMillis(),
          "less than cap.redis.timeout.ms ("
              + limiter.timeout().toMillis()
              + "), so that a WAIT ends, counted, before Redis would count as unreachable");
    }
    Mode mode = r.choice("cap.mode", Mode.class);
    int maxRecords = r.integer("batch.max.records");
    Duration maxWait = r.duration("batch.max.wait.ms");
    int maxInFlight = r.integer("batch.max.in-flight");
    int maxPending = r.maxPending("batch.max.pending", maxRecords);
    Path policies = Installation.resolve(Path.of(r.string("policies.file")));
    Duration segments = r.duration("segments.load.timeout.ms");
    int segmentsMaxBytes = r.integer("segments.max-bytes");
    String serde = r.string("avro.serde");
    List<Schema> writerSchemas = r.schemas("avro.writer-schemas");
    AvroLimits avroLimits =
        new AvroLimits(r.integer(AvroLimits.MAX_SCHEMA_BYTES), r.integer(AvroLimits.MAX_DEPTH));
    Map<String, String> schemaRegistry = r.schemaRegistry(serde);
    String httpHost = r.string("http.host");
    int httpPort = r.integer("http.port");
    Liveness liveness =
        new Liveness(
            r.integer("health.live.max-thread-replacements"),
            r.duration("health.live.replacement-window.ms"));
    Duration brokerTimeout = r.duration("broker.timeout.ms");
    Properties streams = r.streams();
    r.withinTheTransaction(limiter.timeout(), streams);
    int maxSendBytes = r.maxSendBytes("cap.max-send-bytes", streams);
    Batch batch =
        new Batch(
            maxRecords,
            maxWait,
            maxInFlight,
            maxPending,
            r.maxPendingBytes("batch.max.pending-bytes", maxSendBytes));
    r.problems.throwIfAny();
    // the settings line shows what references name as written, not what they hold
    r.effective.replaceAll(
        (key, value) -> Optional.ofNullable(problems.reference(key)).orElse(value));
    return new SendcapConfig(
        streams,
        topics,
        policies,
        segments,
        segmentsMaxBytes,
        limiter,
        mode,
        batch,
        serde,
        writerSchemas,
        avroLimits,
        schemaRegistry,
        httpHost,
        httpPort,
        liveness,
        brokerTimeout,
        maxSendBytes,
        Collections.unmodifiableMap(r.effective));
  }

  /**
   * The settings in force as one line of {@code key=value} pairs, sorted, with secrets masked: the
   * values of {@linkplain Settings#isSecret(String) secret keys} and the user info of URIs; a value
   * read from the environment or a file shows as the reference that named it. For the start-up log.
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
              .append(Settings.isSecret(key) ? "[hidden]" : unlessUserInfo(value));
        });
    return line.toString();
  }

  private static final Pattern USER_INFO = Pattern.compile("([\\w+.-]+://)[^@/,]*@");

  private static String unlessUserInfo(String value) {
    return USER_INFO.matcher(value).replaceAll("$1[hidden]@");
  }

  /** Reads typed values, recording a problem for each invalid one and for unknown own keys. */
  private static final class Values {
    private static final String AUTO = "auto";
    private static final int CLUSTER_KEY_BUCKETS = 32;

    private static final int MAX_PENDING = 1_000_000;

    /** batch.max.pending-bytes=auto: 64 MiB, or cap.max-send-bytes if that is more. */
    private static final int PENDING_BYTES = 64 << 20;

    private final Properties props;
    private final Problems problems;
    private final Map<String, String> effective = new TreeMap<>();

    Values(Properties props, Problems problems) {
      this.props = props;
      this.problems = problems;
      // A Serde class named by avro.serde reads the schema registry's keys: they are its to check.
      String serde = props.getProperty("avro.serde", Settings.defaultOf("avro.serde")).trim();
      boolean serdeClass = !serde.equals(SINGLE_OBJECT) && !serde.equals(CONFLUENT);
      for (String key : new TreeMap<>(props).keySet().stream().map(String::valueOf).toList()) {
        if (isOwn(key) && Settings.of(key).isEmpty() && !(serdeClass && isSchemaRegistry(key))) {
          problems.unknown(key, "see config/sendcap.properties");
        }
      }
    }

    private static boolean isOwn(String key) {
      return OWN_PREFIXES.stream().anyMatch(key::startsWith) || OWN_KEYS.contains(key);
    }

    private static boolean isSchemaRegistry(String key) {
      return key.startsWith("schema.registry.") || key.equals(SchemaRegistrySettings.AUTO_REGISTER);
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
            SchemaRegistrySettings.MAX_RESPONSE_BYTES,
            settings.getOrDefault(
                SchemaRegistrySettings.MAX_RESPONSE_BYTES,
                String.valueOf(SchemaRegistrySettings.DEFAULT_MAX_RESPONSE_BYTES)));
        effective.put(
            SchemaRegistrySettings.MISSING_ID_CACHE_TTL,
            settings.getOrDefault(
                SchemaRegistrySettings.MISSING_ID_CACHE_TTL,
                String.valueOf(SchemaRegistrySettings.DEFAULT_MISSING_ID_CACHE_TTL_MS)));
        effective.put(
            SchemaRegistrySettings.REQUEST_TIMEOUT,
            settings.getOrDefault(
                SchemaRegistrySettings.REQUEST_TIMEOUT,
                String.valueOf(SchemaRegistrySettings.DEFAULT_REQUEST_TIMEOUT_MS)));
      }
      effective.putAll(settings);
      return Collections.unmodifiableMap(settings);
    }

    /** The value of a key without a default, if set and not blank. */
    Optional<String> optionalString(String key) {
      String value = props.getProperty(key, "").trim();
      if (value.isEmpty()) {
        return Optional.empty();
      }
      effective.put(key, value);
      return Optional.of(value);
    }

    /**
     * Records a problem unless {@code store}, if set, is a PKCS12 or JKS key store that opens with
     * {@code password}: a wrong path or password fails start-up here, naming the key, rather than
     * at the first connection.
     */
    void requireTrustStore(
        String key, String passwordKey, Optional<Path> store, Optional<String> password) {
      if (store.isEmpty()) {
        if (password.isPresent()) {
          problems.add(passwordKey, "[hidden]", "only with " + key);
        }
        return;
      }
      try {
        KeyStore.getInstance(store.get().toFile(), password.map(String::toCharArray).orElse(null));
      } catch (IOException | GeneralSecurityException e) {
        problems.add(
            key,
            store.get().toString(),
            "a readable PKCS12 or JKS trust store that opens with "
                + passwordKey
                + " ("
                + e.getMessage()
                + ")");
      }
    }

    String string(String key) {
      String defaultValue = Settings.defaultOf(key);
      String value = props.getProperty(key, defaultValue).trim();
      effective.put(key, value);
      if (value.isEmpty()) {
        problems.add(key, value, "a non-empty value");
        return defaultValue;
      }
      return value;
    }

    boolean bool(String key) {
      String value = string(key);
      if (!value.equals("true") && !value.equals("false")) {
        problems.add(key, value, "true or false");
        return Boolean.parseBoolean(Settings.defaultOf(key));
      }
      return Boolean.parseBoolean(value);
    }

    int integer(String key) {
      Settings.Setting setting = Settings.of(key).orElseThrow();
      String value = string(key);
      try {
        int n = Integer.parseInt(value);
        if (n >= setting.min() && n <= setting.max()) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(key, value, "a whole number from " + setting.min() + " to " + setting.max());
      return Integer.parseInt(Settings.defaultOf(key));
    }

    /**
     * A positive duration: a whole number of milliseconds, as the key's name says, or a number with
     * a unit ({@code 500ms}, {@code 30s}, {@code 15m}, {@code 1h}, {@code 7d}), at most {@link
     * Durations#MAX}.
     */
    Duration duration(String key) {
      String value = string(key);
      Optional<Duration> parsed = parseDuration(value);
      if (parsed.isEmpty()) {
        problems.add(
            key,
            value,
            "a whole number of milliseconds from 1, or a number with a unit (500ms, 30s, 15m, 1h,"
                + " 7d), at most 3650d");
        return parseDuration(Settings.defaultOf(key)).orElseThrow();
      }
      return parsed.get();
    }

    private static Optional<Duration> parseDuration(String value) {
      if (value.matches("\\d{1,13}")) {
        Duration d = Duration.ofMillis(Long.parseLong(value));
        return d.isZero() || d.compareTo(Durations.MAX) > 0 ? Optional.empty() : Optional.of(d);
      }
      return Durations.parse(value);
    }

    /**
     * The number of hash tags users' keys share: {@code auto} (the default) is 32 on a Redis
     * Cluster and 0 (one tag per user) on a standalone Redis.
     */
    int keyBuckets(String key, boolean cluster) {
      String value = string(key);
      if (value.equals(AUTO)) {
        return cluster ? CLUSTER_KEY_BUCKETS : 0;
      }
      try {
        int n = Integer.parseInt(value);
        if (n >= 0 && n <= 1024) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(
          key, value, "auto (32 on a cluster, 0 otherwise) or a whole number from 0 to 1024");
      return cluster ? CLUSTER_KEY_BUCKETS : 0;
    }

    /**
     * {@code cap.max-send-bytes}: auto or a whole number, at most what the producer may write less
     * {@link #OUTPUT_HEADROOM_BYTES}, so that the output of every send read can be written.
     */
    int maxSendBytes(String key, Properties streams) {
      String value = string(key);
      int request;
      try {
        request = maxRequestBytes(streams);
      } catch (NumberFormatException e) {
        return 1; // Kafka's own validation of streams() reports it
      }
      int most = request - OUTPUT_HEADROOM_BYTES;
      if (most < 1) {
        problems.add(
            "max.request.size",
            request,
            "more than "
                + OUTPUT_HEADROOM_BYTES
                + " bytes (producer.max.request.size or max.request.size): sendcap's outputs embed"
                + " the send they decide");
        return 1;
      }
      if (value.equals(AUTO)) {
        return most;
      }
      try {
        int n = Integer.parseInt(value);
        if (n >= 1 && n <= most) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(
          key,
          value,
          "auto or a whole number from 1 to "
              + most
              + ": the producer's max.request.size ("
              + request
              + ") less "
              + OUTPUT_HEADROOM_BYTES
              + " bytes for the key and the decision around the send, or its delivery could never"
              + " be written; raise producer.max.request.size (and the topics' max.message.bytes)"
              + " first");
      return most;
    }

    int maxPending(String key, int maxRecords) {
      String value = string(key);
      if (value.equals(AUTO)) {
        return Batch.PENDING_BATCHES * maxRecords;
      }
      try {
        int n = Integer.parseInt(value);
        if (n >= maxRecords && n <= MAX_PENDING) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(
          key,
          value,
          "auto ("
              + Batch.PENDING_BATCHES
              + " times batch.max.records) or a whole number from batch.max.records ("
              + maxRecords
              + ") to "
              + MAX_PENDING);
      return Batch.PENDING_BATCHES * maxRecords;
    }

    /**
     * {@code batch.max.pending-bytes}: auto or a whole number from {@code cap.max-send-bytes}, so
     * that a task can always hold one send.
     */
    int maxPendingBytes(String key, int maxSendBytes) {
      String value = string(key);
      int auto = Math.max(PENDING_BYTES, maxSendBytes);
      if (value.equals(AUTO)) {
        return auto;
      }
      try {
        int n = Integer.parseInt(value);
        if (n >= maxSendBytes) {
          return n;
        }
      } catch (NumberFormatException e) {
        // reported below
      }
      problems.add(
          key,
          value,
          "auto ("
              + PENDING_BYTES
              + ", or cap.max-send-bytes if more) or a whole number from cap.max-send-bytes ("
              + maxSendBytes
              + ") to "
              + Integer.MAX_VALUE
              + ", so that a task can hold one send");
      return auto;
    }

    <E extends Enum<E>> E choice(String key, Class<E> type) {
      String value = string(key);
      for (E e : type.getEnumConstants()) {
        if (name(e).equals(value)) {
          return e;
        }
      }
      List<String> allowed = Arrays.stream(type.getEnumConstants()).map(Values::name).toList();
      problems.add(key, value, "one of " + String.join(", ", allowed));
      String fallback = Settings.defaultOf(key);
      return Arrays.stream(type.getEnumConstants())
          .filter(e -> name(e).equals(fallback))
          .findFirst()
          .orElseThrow();
    }

    private static String name(Enum<?> e) {
      return e.name().toLowerCase(Locale.ROOT);
    }

    /**
     * Reads {@code cap.redis.uri}: comma-separated {@code redis://} or {@code rediss://} URIs (one
     * for a standalone Redis, seed nodes for a cluster), or one {@code redis-sentinel://} or {@code
     * rediss-sentinel://} URI, whose commas separate its sentinels and which names a standalone
     * master, so it is refused with {@code cap.redis.cluster=true}.
     */
    List<String> redisUris(String key, boolean cluster) {
      String value = string(key).trim();
      if (SENTINEL_SCHEME.matcher(value).lookingAt()) {
        if (!SENTINEL_URI.matcher(value).matches()) {
          problems.add(key, hidePassword(value), SENTINEL_SYNTAX);
        } else if (cluster) {
          problems.add(
              key,
              hidePassword(value),
              "a redis-sentinel:// URI names a standalone master, which needs"
                  + " cap.redis.cluster=false; with cap.redis.cluster=true, redis:// or rediss://"
                  + " seed nodes (a Redis Cluster fails over by itself, without Sentinel)");
        }
        return List.of(value);
      }
      List<String> uris = new ArrayList<>();
      for (String uri : value.split(",")) {
        String trimmed = uri.trim();
        if (validRedisUri(trimmed)) {
          uris.add(trimmed);
        } else {
          problems.add(
              key,
              hidePassword(trimmed),
              "redis://host:port or rediss://host:port, comma-separated, or " + SENTINEL_SYNTAX);
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

    private static final Pattern SENTINEL_SCHEME = Pattern.compile("rediss?-sentinel://");
    private static final String HOST_PORT = "[^,:/@?#\\s]+(?::\\d{1,5})?";
    private static final Pattern SENTINEL_URI =
        Pattern.compile(
            "rediss?-sentinel://(?:[^@/,]+@)?"
                + HOST_PORT
                + "(?:,"
                + HOST_PORT
                + ")*(?:/\\d+)?(?:\\?[^#]*)?#[^#\\s]+");
    private static final String SENTINEL_SYNTAX =
        "redis-sentinel://[PASSWORD@]host:port[,host:port...][/DB]#MASTER (Sentinel's address"
            + " and the name it monitors the master under)";

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
      Settings.kafkaDefaults().forEach(streams::setProperty);
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
