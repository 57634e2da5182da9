package io.sendcap.config;

import io.sendcap.serde.AvroLimits;
import io.sendcap.serde.SchemaRegistrySettings;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Every setting of {@code config/sendcap.properties} in one table: its key, its default, what it
 * accepts and what it does. {@link SendcapConfig} reads the defaults and the known keys from it,
 * the {@code settings:} line of {@code run} shows each one in force, and {@link #propertiesFile()}
 * writes the commented file ({@code SettingsFileTest} keeps {@code config/sendcap.properties} equal
 * to it).
 */
public final class Settings {
  /** How a value is read. */
  public enum Kind {
    /** Any non-empty text. */
    TEXT,
    /** {@code true} or {@code false}. */
    BOOLEAN,
    /** A whole number within bounds. */
    INTEGER,
    /**
     * Milliseconds, or a number with a unit: {@code 500ms}, {@code 30s}, {@code 15m}, {@code 7d}.
     */
    DURATION,
    /** One of a few words. */
    CHOICE,
    /** Read by its own parser (URIs, schema files, the schema registry's settings). */
    OTHER,
    /** A Kafka Streams or client property, passed to Kafka Streams as it is. */
    KAFKA
  }

  /**
   * One setting.
   *
   * @param key the key
   * @param defaultValue the value when the key is not set; empty for a key without one, which the
   *     file shows commented out with {@code example}
   * @param example the value the file shows for a key without a default
   * @param kind how its value is read
   * @param min the least value of an {@link Kind#INTEGER}
   * @param max the greatest value of an {@link Kind#INTEGER}
   * @param doc what it does, the lines of its comment in the file
   */
  public record Setting(
      String key,
      Optional<String> defaultValue,
      String example,
      Kind kind,
      long min,
      long max,
      String doc) {}

  /** A titled group of settings in the file. */
  record Section(String title, List<Setting> settings) {}

  private static final String HEADER =
      """
      sendcap configuration: every key with its default.

      Keys under topic., cap., batch., policies., segments., avro., http., health. and
      schema.registry., and auto.register.schemas and broker.timeout.ms, are sendcap's own; an
      unknown one fails start-up.
      Every other key is a Kafka Streams or client property and is passed to Kafka Streams as it is
      (security.protocol, num.stream.threads, commit.interval.ms, ...).
      Durations (keys ending in .ms) are milliseconds, or a number with a unit: 500ms, 30s, 15m, 1h,
      7d.
      A value may name where a secret is kept instead of holding it: ${env:NAME} (an environment
      variable), ${file:/path} (a file's contents), ${file:/path:KEY} (a key of a properties file),
      also within a value: cap.redis.uri=rediss://sendcap:${env:REDIS_PASSWORD}@redis:6380.
      This file is written from the table of settings in the code (Settings.java).""";

  static final List<Section> SECTIONS =
      List.of(
          new Section(
              "Kafka Streams",
              List.of(
                  kafka("bootstrap.servers", "localhost:9092", "Brokers to bootstrap from."),
                  kafka(
                      "application.id",
                      "sendcap",
                      "Consumer group and prefix of internal topics; instances with the same id"
                          + " share the work."),
                  kafka(
                      "processing.guarantee",
                      "exactly_once_v2",
                      "exactly_once_v2 (outputs, offsets and the mark of each task's undecided"
                          + " sends commit atomically) or at_least_once."),
                  kafka(
                      "commit.interval.ms",
                      "1000",
                      "How often each task commits. Under exactly_once_v2, read_committed consumers"
                          + " (delivery workers)\n"
                          + "see a decision at the commit after it, so a send waits up to this much"
                          + " longer to be delivered;\n"
                          + "each commit writes a transaction marker to every partition it wrote"
                          + " (deliveries, suppressed,\n"
                          + "DLQ, the marks' changelog): at Kafka Streams' 100, the pipeline bench"
                          + " spent about 3 us\n"
                          + "more CPU per send than at 1000 (BENCHMARKS.md). Kafka Streams'"
                          + " defaults: 100 under\n"
                          + "exactly_once_v2, 30000 under at_least_once."),
                  kafka(
                      "producer.batch.size",
                      "65536",
                      "The most bytes of records the producer sends to one partition in one batch"
                          + " (Kafka's default: 16384).\n"
                          + "Fewer, larger batches mean fewer appends for the broker and fewer"
                          + " requests for the producer:\n"
                          + "at 16384 the pipeline bench spent about a fifth more JVM CPU per send"
                          + " (BENCHMARKS.md).\n"
                          + "A batch being filled takes this much of producer.buffer.memory (32 MiB"
                          + " by default) for each\n"
                          + "partition a stream thread writes to: with hundreds of output partitions"
                          + " per thread, raise\n"
                          + "that or lower this."),
                  kafka(
                      "max.task.idle.ms",
                      "-1",
                      "How long a task waits for data on an empty input partition before"
                          + " processing its others (Kafka's\n"
                          + "default: 0). Every task of sendcap reads one partition, so there is"
                          + " nothing to line up; -1\n"
                          + "skips the check, which Kafka Streams 4.3 makes for every empty"
                          + " partition on every pass\n"
                          + "and which formats its log message each time (BENCHMARKS.md)."),
                  kafka(
                      "processing.exception.handler.global.enabled",
                      "true",
                      "Send processing errors of global stores to the processing exception handler"
                          + " too (Kafka 5.0's default)."),
                  kafka(
                      "main.consumer.processing.exception.handler.global.enabled",
                      "true",
                      "The same, seen by the stream threads' consumers: Kafka Streams 4.3's"
                          + " partition assignor reads\n"
                          + "its settings from theirs, and warns at every start that the handler is"
                          + " off without it."))),
          new Section(
              "Topics (they must exist before start-up)",
              List.of(
                  text(
                      "topic.input",
                      "campaign-sends",
                      "Scheduled sends from the campaign engine (Avro ScheduledSend, key = user"
                          + " id)."),
                  text(
                      "topic.deliveries",
                      "deliveries",
                      "Allowed sends, for the delivery workers (Avro Delivery)."),
                  text(
                      "topic.suppressed",
                      "suppressed",
                      "Capped sends with the reason and nextEligibleAt (Avro Suppression)."),
                  text(
                      "topic.dlq",
                      "campaign-sends-dlq",
                      "Records that cannot be read or are invalid: raw bytes, the error in"
                          + " __streams.errors.* headers."),
                  text(
                      "topic.segments",
                      "segments",
                      "Segments: compacted; written by `bin/sendcap segments publish`, read by every"
                          + " instance."),
                  text(
                      "topic.policies",
                      "policies",
                      "Published policies: compacted; written by `bin/sendcap policies publish`,"
                          + " read by every instance,\n"
                          + "which switches to a new version without a restart. sendcap creates it"
                          + " if it does not exist."))),
          new Section(
              "Policies and segments",
              List.of(
                  text(
                      "policies.file",
                      "config/policies.yaml",
                      "The caps of each segment, in priority order (see config/policies.yaml),"
                          + " used until a version is\n"
                          + "published on topic.policies; from then on the newest published"
                          + " version is used. A relative path\n"
                          + "is resolved against the current directory, and then against the"
                          + " installation (bin/sendcap's)."),
                  duration(
                      "segments.load.timeout.ms",
                      "120000",
                      "How long start-up waits for every segment the policies name to be on"
                          + " topic.segments."),
                  integer(
                      "segments.max-bytes",
                      "268435456",
                      1024,
                      Integer.MAX_VALUE - 8,
                      "The most bytes one published segment may hold (its manifest's bytes), and"
                          + " the most bytes of chunks\n"
                          + "that may wait for their manifests, all segments together. A record of"
                          + " topic.segments beyond it\n"
                          + "is skipped and counted in sendcap_segments_rejected_total{reason=\"too-large\"}. Four segments\n"
                          + "over 270M users take about 135 MB in all (BENCHMARKS.md)."))),
          new Section(
              "Limiter",
              List.of(
                  choice(
                      "cap.mode",
                      "enforce",
                      "enforce: capped sends go to topic.suppressed only. shadow: every send is"
                          + " delivered, and those the\n"
                          + "policies would have capped are also written to topic.suppressed with"
                          + " shadow=true, to try a new\n"
                          + "policy on live traffic before enforcing it."),
                  choice(
                      "cap.clock",
                      "wall",
                      "Decision time: wall (this instance's clock) or event (the send's"
                          + " scheduledAt; deterministic replays)."),
                  duration(
                      "cap.idempotency.retention.ms",
                      "86400000",
                      "A logged send is kept at least this long, even after it has left every"
                          + " window of its policy,\n"
                          + "so that a replay of it (a restart, a rebalance, a duplicate from the"
                          + " campaign engine) within\n"
                          + "this time is recognised and counts once. Policies with longer windows"
                          + " keep sends longer anyway."),
                  other(
                      "cap.redis.uri",
                      "redis://localhost:6379",
                      "Redis URI; for a cluster, one or more comma-separated seed nodes and"
                          + " cap.redis.cluster=true; for a\n"
                          + "master that Sentinel fails over,"
                          + " redis-sentinel://[PASSWORD@]host:port[,host:port...][/DB]#MASTER\n"
                          + "(the sentinels, and the name they monitor the master under)."),
                  bool(
                      "cap.redis.cluster", "false", "Whether cap.redis.uri names a Redis Cluster."),
                  optional(
                      "cap.redis.ssl.truststore.location",
                      "",
                      "For rediss:// URIs whose certificate the JDK does not trust: a PKCS12 or"
                          + " JKS trust store holding\n"
                          + "the certificate of the CA that signed Redis's. A Redis ACL user and"
                          + " its password go in the\n"
                          + "URI: rediss://USER:PASSWORD@host:port (README: \"Running against a"
                          + " secured Redis\")."),
                  optional("cap.redis.ssl.truststore.password", "", ""),
                  text(
                      "cap.redis.key-prefix",
                      "s",
                      "Prefix of every Redis key sendcap writes: keys are PREFIX{USERID}, the user"
                          + " id being the\n"
                          + "cluster hash tag, or PREFIX{TAG}USERID with cap.redis.key-buckets."
                          + " Short, because every byte of a\n"
                          + "key is paid for once per user."),
                  other(
                      "cap.redis.key-buckets",
                      "auto",
                      "How many hash tags the users' keys share: each user falls in one of this"
                          + " many buckets, derived\n"
                          + "from the user id alone, and keys are PREFIX{TAG}USERID, so that one"
                          + " script call on a cluster\n"
                          + "decides the sends of many users (about batch.max.records / this, up to"
                          + " sends-per-call). 0: one\n"
                          + "tag per user, PREFIX{USERID}. auto: 32 with cap.redis.cluster=true, 0"
                          + " otherwise. Changing it\n"
                          + "moves users to other keys: see the README's \"Key layout\" before"
                          + " changing it on a live cluster."),
                  integer(
                      "cap.redis.sends-per-call",
                      "32",
                      1,
                      1000,
                      "How many sends one call of the script decides (on a cluster, sends whose"
                          + " users share a slot).\n"
                          + "Redis pays a fixed cost per call; sharing it between sends raises its"
                          + " throughput; each\n"
                          + "send adds a few microseconds to the time one call holds Redis."),
                  duration(
                      "cap.redis.timeout.ms",
                      "4000",
                      "How long Redis may take to answer all the calls of one batch (its"
                          + " global-cap tokens, its\n"
                          + "per-user call with a NOSCRIPT reload and retry, its second chance)"
                          + " before it counts as\n"
                          + "unreachable. Under exactly_once_v2, twice this plus commit.interval.ms"
                          + " must fit in the producer's\n"
                          + "transaction.timeout.ms (10 s by default): start-up refuses more."),
                  integer(
                      "cap.redis.wait-replicas",
                      "0",
                      0,
                      16,
                      "After each batch's calls, wait (WAIT) until this many replicas of each"
                          + " master have its writes,\n"
                          + "so that a replica promoted after its master failed forgets no logged"
                          + " send (replication is\n"
                          + "asynchronous otherwise, and a user may receive a send more than its"
                          + " cap). A master with fewer\n"
                          + "replicas (one just promoted) is not waited on, its batches counted in\n"
                          + "sendcap_redis_wait_shortfalls_total. The Redis user needs WAIT, and ROLE"
                          + " without a cluster.\n"
                          + "0: do not wait."),
                  duration(
                      "cap.redis.wait-timeout.ms",
                      "1000",
                      "How long one WAIT of cap.redis.wait-replicas may take, less than"
                          + " cap.redis.timeout.ms; the batch\n"
                          + "is decided anyway when it ends, and sendcap_redis_wait_shortfalls_total"
                          + " counts it."),
                  choice(
                      "cap.redis.failure-mode",
                      "block",
                      "While Redis is unreachable: block (pause processing, decide nothing, lose"
                          + " nothing, resume once\n"
                          + "Redis answers), allow (deliver, marked failOpen) or suppress (reason"
                          + " LIMITER_UNAVAILABLE)."),
                  duration(
                      "cap.global.lease.ms",
                      "5000",
                      "How long an instance holds the tokens of a global cap (see the policies'"
                          + " `global` section) that it\n"
                          + "reserved from Redis in a batch; tokens still unused then go back, for"
                          + " other instances."),
                  other(
                      "cap.max-send-bytes",
                      "auto",
                      "The most bytes of value and headers a send may have, as read (before"
                          + " compression). A larger one\n"
                          + "goes to the dead-letter topic without its body, before it is decided,"
                          + " so it consumes no cap:\n"
                          + "its delivery or suppression embeds it and could never be written. auto:"
                          + " the producer's\n"
                          + "max.request.size (1048576 unless producer.max.request.size or"
                          + " max.request.size says otherwise)\n"
                          + "less 16384 bytes for the key (at most 4096 bytes, or the send goes to"
                          + " the dead-letter topic\n"
                          + "too) and the decision around the send; a larger value fails start-up."),
                  duration(
                      "cap.max-skew.ms",
                      "7d",
                      "A send whose scheduledAt lies further than this from its record's"
                          + " timestamp (before or after)\n"
                          + "goes to the dead-letter topic: under cap.clock=event it would be"
                          + " logged far from the sends\n"
                          + "around it. Under cap.clock=event, so does a send more than this behind"
                          + " its partition's stream\n"
                          + "time (the newest record timestamp of the sends it let through): the"
                          + " caps' logs keep what such\n"
                          + "sends count for this long only; and so does a send stamped or"
                          + " scheduled more than this ahead of\n"
                          + "this instance's clock, which moves no stream time: one record stamped"
                          + " in the year 2100 costs\n"
                          + "that record, not every send after it. Producers stamp records with the"
                          + " time they are"
                          + " produced, so this is how far\n"
                          + "ahead of (or behind) a send's scheduledAt the campaign engine may"
                          + " produce it; sendcap decides\n"
                          + "from scheduledAt or its clock, never from the record's timestamp."))),
          new Section(
              "Micro-batching",
              List.of(
                  integer(
                      "batch.max.records",
                      "500",
                      1,
                      100_000,
                      "A task flushes its batch to Redis when it holds this many sends ..."),
                  duration(
                      "batch.max.wait.ms",
                      "50",
                      "... or when its oldest send has waited this long."),
                  integer(
                      "batch.max.in-flight",
                      "1",
                      1,
                      16,
                      "How many of a task's batches may be with Redis at once: with more than one,"
                          + " the stream\n"
                          + "thread reads on while Redis decides them (bench pipeline: 28% more"
                          + " sends/s at\n"
                          + "3), but if Redis restarts while a batch waits, a later batch"
                          + " queued meanwhile can\n"
                          + "be decided before it (see README). 1 while the policies have global"
                          + " caps."),
                  other(
                      "batch.max.pending",
                      "auto",
                      "While a task has all the batches with Redis it may have, it reads on past"
                          + " batch.max.records\n"
                          + "instead of waiting, and its next batch, flushed once Redis has"
                          + " answered, takes every send\n"
                          + "it holds: up to this many, where the stream thread waits for Redis."
                          + " At least\n"
                          + "batch.max.records; auto: 8 times it. A send held takes about 360"
                          + " bytes of heap for\n"
                          + "a record of 56 bytes (key and value, as in bench pipeline), and more"
                          + " for a larger one: its\n"
                          + "bytes are kept, and the send decoded."),
                  other(
                      "batch.max.pending-bytes",
                      "auto",
                      "... and up to this many bytes of sends (values and headers, as read), where"
                          + " the stream thread\n"
                          + "waits for Redis as at batch.max.pending; a batch is also flushed once"
                          + " its sends have an eighth\n"
                          + "of this, so that large sends do not wait for batch.max.records of them."
                          + " At least\n"
                          + "cap.max-send-bytes, so that one send always fits; auto: 67108864 (64"
                          + " MiB), or cap.max-send-bytes\n"
                          + "if that is more. A task holds at most this plus one send unflushed,"
                          + " and batch.max.in-flight\n"
                          + "batches of about as much with Redis."))),
          new Section(
              "Serialization",
              List.of(
                  other(
                      "avro.serde",
                      "single-object",
                      "single-object: Avro single-object encoding (marker 0xC3 0x01, the schema's"
                          + " fingerprint, the\n"
                          + "record), schemas from schemas/, no registry.\n"
                          + "confluent: the Confluent wire format (byte 0x00, the 4-byte schema id,"
                          + " the record) with a schema\n"
                          + "registry (see below), what Confluent's serializers write and read."
                          + " Reads single-object records\n"
                          + "too, so the input topic can move from one framing to the other"
                          + " without a stop.\n"
                          + "Or the class name of a Kafka Serde for Avro; it is configured with the"
                          + " Kafka Streams properties\n"
                          + "and the schema registry keys below, which it checks itself."),
                  optional(
                      "avro.writer-schemas",
                      "",
                      "Other versions of ScheduledSend that the campaign engine may write with"
                          + " (comma-separated .avsc\n"
                          + "files), for the single-object serde; a schema registry's serde finds"
                          + " them itself. A send whose\n"
                          + "values do not fit sendcap's version (an unknown channel, no messageId)"
                          + " goes to the dead-letter\n"
                          + "topic with the reason."),
                  integer(
                      AvroLimits.MAX_SCHEMA_BYTES,
                      String.valueOf(AvroLimits.DEFAULT_MAX_SCHEMA_BYTES),
                      1,
                      AvroLimits.MAX_MAX_SCHEMA_BYTES,
                      "The most bytes of schema text a writer's schema may have (one from the"
                          + " schema registry, or one of\n"
                          + "avro.writer-schemas). A send written with a longer one goes to the"
                          + " dead-letter topic with the reason."),
                  integer(
                      AvroLimits.MAX_DEPTH,
                      String.valueOf(AvroLimits.DEFAULT_MAX_DEPTH),
                      1,
                      AvroLimits.MAX_MAX_DEPTH,
                      "How deep records, arrays and maps may nest, in a writer's schema and in a"
                          + " send. A recursive schema\n"
                          + "(a record holding an optional record of its own type) is legal Avro;"
                          + " a send nested deeper than\n"
                          + "this, or written with a schema nested deeper, goes to the dead-letter"
                          + " topic with the reason.\n"
                          + "ScheduledSend nests 2 deep, a Delivery 3."))),
          new Section(
              "Schema registry (avro.serde=confluent)",
              List.of(
                  optional(
                      SchemaRegistrySettings.URL,
                      "http://localhost:8081",
                      "Not passed to Kafka Streams. Required: one or more comma-separated base"
                          + " URLs of a registry with\n"
                          + "the Confluent-compatible REST API, tried in order; a path is kept"
                          + " (Apicurio Registry:\n"
                          + "http://host:8080/apis/ccompat/v7). Credentials do not go in the URL."),
                  optional(
                      SchemaRegistrySettings.USER_INFO,
                      "",
                      "user:password, sent as HTTP Basic authentication."),
                  optional(
                      SchemaRegistrySettings.TRUSTSTORE_LOCATION,
                      "",
                      "For https URLs whose certificate the JDK does not trust: a PKCS12 or JKS"
                          + " trust store."),
                  optional(SchemaRegistrySettings.TRUSTSTORE_PASSWORD, "", ""),
                  optional(
                      SchemaRegistrySettings.KEYSTORE_LOCATION,
                      "",
                      "For a registry that requires a client certificate (mutual TLS): a PKCS12"
                          + " or JKS key store."),
                  optional(SchemaRegistrySettings.KEYSTORE_PASSWORD, "", ""),
                  optional(
                      SchemaRegistrySettings.KEY_PASSWORD,
                      "",
                      "The key's password, if it differs from the key store's."),
                  optional(
                      SchemaRegistrySettings.REQUEST_TIMEOUT,
                      String.valueOf(SchemaRegistrySettings.DEFAULT_REQUEST_TIMEOUT_MS),
                      "How long one request to the registry may take. Ids and schemas are"
                          + " cached: the registry is asked\n"
                          + "once per schema, not per record."),
                  optional(
                      SchemaRegistrySettings.MAX_RESPONSE_BYTES,
                      String.valueOf(SchemaRegistrySettings.DEFAULT_MAX_RESPONSE_BYTES),
                      "The most bytes of an answer of the registry that are read (1024 to"
                          + " 268435456; by default 4 MiB).\n"
                          + "A schema in a longer answer cannot be read: the sends written with it"
                          + " go to the dead-letter topic."),
                  optional(
                      SchemaRegistrySettings.MISSING_ID_CACHE_TTL,
                      String.valueOf(SchemaRegistrySettings.DEFAULT_MISSING_ID_CACHE_TTL_MS),
                      "How long a schema id the registry does not know, or whose schema cannot"
                          + " be read, is remembered as\n"
                          + "such (0 to 86400000; 0: not at all): a flood of sends with unknown ids"
                          + " costs one request per id\n"
                          + "in this time, and each of them goes to the dead-letter topic."),
                  optional(
                      SchemaRegistrySettings.AUTO_REGISTER,
                      "true",
                      "true: at start-up sendcap registers Delivery and Suppression under"
                          + " <topic>-value of\n"
                          + "topic.deliveries and topic.suppressed. false (registries only their"
                          + " owners write to): they must\n"
                          + "be registered there already, self-contained, or start-up fails naming"
                          + " the subject."))),
          new Section(
              "Operations",
              List.of(
                  duration(
                      "broker.timeout.ms",
                      "15s",
                      "How long a command waits for the Kafka brokers to answer (run at start-up,"
                          + " for its topics; the tools\n"
                          + "for each step) before it gives up with one line naming"
                          + " bootstrap.servers. Not passed to Kafka Streams."),
                  text(
                      "http.host",
                      "0.0.0.0",
                      "Interface of the HTTP endpoint: 0.0.0.0 for all of them, 127.0.0.1 for"
                          + " this machine only, or a\n"
                          + "host name or address of one of them."),
                  integer(
                      "http.port",
                      "8080",
                      -1,
                      65_535,
                      "Port of the HTTP endpoint: /metrics (Prometheus), /health/live and"
                          + " /health/ready. 0 picks a\n"
                          + "free port (logged at start-up); -1 serves nothing."),
                  integer(
                      "health.live.max-thread-replacements",
                      "5",
                      0,
                      1_000_000,
                      "A stream thread that fails is replaced, and its tasks resume from the"
                          + " last commit. When more than\n"
                          + "this many were replaced within health.live.replacement-window.ms, the"
                          + " instance is in a crash loop:\n"
                          + "/health/live answers 503, for good, so that its orchestrator restarts"
                          + " it. 0: at the first one."),
                  duration(
                      "health.live.replacement-window.ms",
                      "10m",
                      "How long a replacement counts against"
                          + " health.live.max-thread-replacements."))));

  private static final Map<String, Setting> BY_KEY =
      SECTIONS.stream()
          .flatMap(s -> s.settings().stream())
          .collect(Collectors.toMap(Setting::key, s -> s, (a, b) -> a, LinkedHashMap::new));

  private Settings() {}

  /**
   * Keys whose values are secrets: passwords and passphrases, secrets, tokens, JAAS configurations,
   * credentials and user info, and private keys ({@code ssl.keystore.key}, a PEM key, and any key
   * named {@code key} or {@code private.key}), with or without a client prefix.
   */
  private static final Pattern SECRET_KEY =
      Pattern.compile(
          "(?i)password|passphrase|secret|token|jaas|user\\.info|credentials|private\\.key"
              + "|(^|[.-])key$");

  /**
   * Whether the value of {@code key} is a secret: the {@code settings:} line shows it as {@code
   * [hidden]}, and no problem repeats it.
   */
  public static boolean isSecret(String key) {
    return SECRET_KEY.matcher(key).find();
  }

  /** The setting of {@code key}, if it is one of the table's. */
  public static Optional<Setting> of(String key) {
    return Optional.ofNullable(BY_KEY.get(key));
  }

  /** Every setting, in the file's order. */
  public static List<Setting> all() {
    return List.copyOf(BY_KEY.values());
  }

  /** The default of a setting of the table that has one. */
  public static String defaultOf(String key) {
    Setting setting = BY_KEY.get(key);
    if (setting == null || setting.defaultValue().isEmpty()) {
      throw new IllegalArgumentException("no default in the table of settings: " + key);
    }
    return setting.defaultValue().get();
  }

  /** The Kafka Streams properties sendcap sets unless the configuration does. */
  static Map<String, String> kafkaDefaults() {
    Map<String, String> defaults = new LinkedHashMap<>();
    BY_KEY.values().stream()
        .filter(s -> s.kind() == Kind.KAFKA)
        .forEach(s -> defaults.put(s.key(), s.defaultValue().orElseThrow()));
    return defaults;
  }

  /** {@code config/sendcap.properties} as the table writes it. */
  public static String propertiesFile() {
    StringBuilder file = new StringBuilder();
    HEADER.lines().forEach(line -> file.append(comment(line)));
    for (Section section : SECTIONS) {
      file.append('\n').append("# --- ").append(section.title()).append(" ---\n");
      for (Setting s : section.settings()) {
        s.doc().lines().forEach(line -> file.append(comment(line)));
        if (s.defaultValue().isEmpty()) {
          file.append('#').append(s.key()).append('=').append(s.example()).append('\n');
        } else {
          file.append(s.key()).append('=').append(s.defaultValue().get()).append('\n');
        }
      }
    }
    return file.toString();
  }

  private static String comment(String line) {
    return line.isEmpty() ? "#\n" : "# " + line + "\n";
  }

  private static Setting kafka(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.KAFKA, 0, 0, doc);
  }

  private static Setting text(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.TEXT, 0, 0, doc);
  }

  private static Setting bool(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.BOOLEAN, 0, 0, doc);
  }

  private static Setting choice(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.CHOICE, 0, 0, doc);
  }

  private static Setting duration(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.DURATION, 0, 0, doc);
  }

  private static Setting integer(String key, String defaultValue, long min, long max, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.INTEGER, min, max, doc);
  }

  private static Setting other(String key, String defaultValue, String doc) {
    return new Setting(key, Optional.of(defaultValue), "", Kind.OTHER, 0, 0, doc);
  }

  /** A setting the file shows commented out, with {@code example}: unset by default. */
  private static Setting optional(String key, String example, String doc) {
    return new Setting(key, Optional.empty(), example, Kind.OTHER, 0, 0, doc);
  }
}
