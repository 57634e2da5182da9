package io.sendcap.app;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.kafka.KafkaStreamsMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.RedisConnector;
import io.sendcap.limit.RedisErrors;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import io.sendcap.topology.SendcapTopology;
import io.sendcap.topology.Undecided;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running sendcap instance: the policies, the segment index, the Redis limiter and the Kafka
 * Streams application that uses them.
 */
public final class SendcapApp implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SendcapApp.class);

  private final RedisConnector redis;
  private final GlobalQuotas quotas;
  private final KafkaStreams streams;
  private final SegmentRegistry segments;
  private final LimiterBackpressure backpressure;
  private final RegistryBackpressure registryOutage;
  private final Undecided undecided;
  private final Duration drainTimeout;
  private final PrometheusMeterRegistry metrics;
  private final List<AutoCloseable> binders;
  private final HttpEndpoint http;
  private final AtomicBoolean closed = new AtomicBoolean();

  private SendcapApp(
      RedisConnector redis,
      GlobalQuotas quotas,
      KafkaStreams streams,
      SegmentRegistry segments,
      LimiterBackpressure backpressure,
      RegistryBackpressure registryOutage,
      Undecided undecided,
      Duration drainTimeout,
      PrometheusMeterRegistry metrics,
      List<AutoCloseable> binders,
      HttpEndpoint http) {
    this.redis = redis;
    this.quotas = quotas;
    this.streams = streams;
    this.segments = segments;
    this.backpressure = backpressure;
    this.registryOutage = registryOutage;
    this.undecided = undecided;
    this.drainTimeout = drainTimeout;
    this.metrics = metrics;
    this.binders = binders;
    this.http = http;
  }

  /**
   * Validates everything the application needs, then starts it.
   *
   * <p>The policies are the newest version published on {@code topic.policies} (created if
   * missing), or the file's if none was; a version published later is used from its arrival on. No
   * send is decided before a version of every segment the policies name has been read from the
   * segments topic: Kafka Streams starts paused, restores its global stores, and resumes once the
   * segments are in; if one is still missing after {@code segments.load.timeout.ms}, start-up fails
   * naming it.
   *
   * <p>Its meters (see {@link #metrics()}) are served in the Prometheus format on {@code
   * http.port}, with the health checks. A stream thread that fails is replaced, and its tasks
   * resume from the last commit; liveness fails for good once more than {@code
   * health.live.max-thread-replacements} were replaced within {@code
   * health.live.replacement-window.ms} (see {@link ThreadReplacements}).
   *
   * <p>With {@code avro.serde=confluent}, the schema registry must answer, and sendcap's output
   * schemas are registered under {@code <topic>-value} of the deliveries and suppressed topics, or
   * with {@code auto.register.schemas=false} must be registered there already. Should the registry
   * become unreachable later, a send whose schema must be fetched waits for it, and reading resumes
   * once it answers (see {@link RegistryBackpressure}); the outputs' schema ids are known by then.
   *
   * @throws StartupException if the topics, the schema registry, the segments or Redis are not
   *     there to use
   */
  public static SendcapApp start(SendcapConfig config) {
    LOG.info("settings: {}", config.describe());
    LivePolicies policies =
        new LivePolicies(Policies.load(config.policiesFile()), config.policiesFile().toString());
    requireTopics(config);
    SchemaRegistryCheck.require(config);
    PrometheusMeterRegistry metrics = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    RedisConnector redis = connectRedis(config, metrics);
    SegmentRegistry segments = new SegmentRegistry(policies.current().policies().segmentNames());
    Set<String> gauged = ConcurrentHashMap.newKeySet();
    segmentGauges(segments, gauged, metrics);
    policies.onChange(
        p -> {
          segments.prioritize(p.segmentNames());
          segmentGauges(segments, gauged, metrics);
        });
    Gauge.builder("sendcap.policies.version", policies, p -> p.current().version())
        .description("The published version of the policies in use (0: policies.file)")
        .register(metrics);
    Properties props = SendcapTopology.streamsProperties(config, metrics);
    InstantSource clock = InstantSource.system();
    LimiterBackpressure backpressure = new LimiterBackpressure(redis, clock, metrics);
    RegistryBackpressure registryOutage = new RegistryBackpressure(clock, metrics);
    Undecided undecided = new Undecided(metrics);
    GlobalQuotas quotas =
        new GlobalQuotas(
            redis.openQuotas(),
            config.limiter().keyPrefix(),
            clock,
            config.limiter().globalLease(),
            metrics);
    Topology topology;
    try {
      topology =
          SendcapTopology.build(
              config,
              policies,
              segments,
              redis::open,
              quotas,
              clock,
              backpressure,
              registryOutage,
              undecided,
              metrics);
    } catch (SchemaRegistryUnavailableException | SerializationException e) {
      // the registry answered the start-up check a moment ago, and no longer
      backpressure.close();
      quotas.close();
      redis.close();
      throw new StartupException(e.getMessage(), e);
    }
    KafkaStreams streams = new KafkaStreams(topology, props);
    backpressure.attach(streams);
    new StateLog(
            props.getProperty(StreamsConfig.APPLICATION_ID_CONFIG),
            config.topics().input(),
            props.containsKey(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG)
                || props.containsKey(
                    StreamsConfig.mainConsumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG)))
        .attach(streams);
    ThreadReplacements replacements =
        new ThreadReplacements(
            config.liveness().maxThreadReplacements(),
            config.liveness().replacementWindow(),
            clock,
            metrics);
    HttpEndpoint http =
        serve(config, metrics, streams, redis, backpressure, registryOutage, replacements);
    streams.setUncaughtExceptionHandler(
        e -> {
          if (Thread.currentThread().getName().endsWith("-GlobalStreamThread")) {
            // Kafka Streams cannot replace its global thread: it stops, and liveness follows.
            LOG.error("the global stream thread failed; Kafka Streams stops", e);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
          }
          if (registryOutage.closed() && causedBy(e, SchemaRegistryUnavailableException.class)) {
            // sendcap stops during an outage: the wait for the registry ended, no crash
            LOG.info(
                "a stream thread stopped waiting for the schema registry as sendcap stops; its"
                    + " tasks resume from the last commit at the next start");
            return StreamThreadExceptionResponse.REPLACE_THREAD;
          }
          replacements.record(e);
          LOG.error("stream thread failed; replacing it, its tasks resume from the last commit", e);
          return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
    streams.pause();
    streams.start();
    awaitSegments(config, segments, streams, backpressure, redis, http);
    streams.resume();
    List<AutoCloseable> binders = bindMeters(streams, metrics);
    LOG.info(
        "sendcap started: {} -> {} | {}, DLQ {}; Redis {}{}, clock {}, failure mode {}, mode {},"
            + " policies v{} ({})",
        config.topics().input(),
        config.topics().deliveries(),
        config.topics().suppressed(),
        config.topics().deadLetters(),
        config.limiter().where(),
        config.limiter().cluster() ? " (cluster)" : "",
        config.limiter().clock(),
        config.limiter().failureMode(),
        config.mode(),
        policies.current().version(),
        policies.current().origin());
    // A drain decides the batch in hand at the next tick: one Redis round trip, and some slack.
    Duration drainTimeout = Undecided.TICK.plus(config.limiter().timeout()).plusSeconds(5);
    return new SendcapApp(
        redis,
        quotas,
        streams,
        segments,
        backpressure,
        registryOutage,
        undecided,
        drainTimeout,
        metrics,
        binders,
        http);
  }

  /** Whether {@code type} is among the causes of {@code e}, or {@code e} itself. */
  private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  /** The version of every segment the policies name, as a gauge; {@code gauged} has one already. */
  private static void segmentGauges(
      SegmentRegistry segments, Set<String> gauged, MeterRegistry metrics) {
    for (String segment : segments.priorityOrder()) {
      if (!gauged.add(segment)) {
        continue;
      }
      Gauge.builder("sendcap.segment.version", segments, r -> r.version(segment))
          .description("The version of the segment in use (0: none yet)")
          .tag("segment", segment)
          .register(metrics);
    }
  }

  /** Serves metrics and health on {@code http.port}, unless it is -1. */
  private static HttpEndpoint serve(
      SendcapConfig config,
      PrometheusMeterRegistry metrics,
      KafkaStreams streams,
      RedisConnector redis,
      LimiterBackpressure backpressure,
      RegistryBackpressure registryOutage,
      ThreadReplacements replacements) {
    if (config.httpPort() < 0) {
      return null;
    }
    try {
      return HttpEndpoint.start(
          config.httpHost(),
          config.httpPort(),
          metrics::scrape,
          () -> live(streams, replacements),
          new CachedHealth(
              () -> ready(streams, redis, backpressure, registryOutage),
              CachedHealth.READY_MAX_AGE,
              InstantSource.system()));
    } catch (UncheckedIOException e) {
      streams.close(Duration.ofSeconds(30));
      backpressure.close();
      redis.close();
      throw new StartupException(
          e.getMessage()
              + ": "
              + e.getCause().getMessage()
              + "; set another http.port or http.host",
          e);
    }
  }

  /** Kafka Streams' own metrics (dropped records: the dead letters), and the JVM's. */
  private static List<AutoCloseable> bindMeters(KafkaStreams streams, MeterRegistry metrics) {
    KafkaStreamsMetrics kafka = new KafkaStreamsMetrics(streams);
    JvmGcMetrics gc = new JvmGcMetrics();
    kafka.bindTo(metrics);
    gc.bindTo(metrics);
    new JvmMemoryMetrics().bindTo(metrics);
    new ProcessorMetrics().bindTo(metrics);
    return List.of(kafka, gc);
  }

  /**
   * Alive unless Kafka Streams has failed or is shutting down, or its stream threads have been
   * replaced too often.
   */
  private static HttpEndpoint.Health live(KafkaStreams streams, ThreadReplacements replacements) {
    Optional<String> crashLoop = replacements.failure();
    if (crashLoop.isPresent()) {
      return new HttpEndpoint.Health(false, crashLoop.get());
    }
    KafkaStreams.State state = streams.state();
    boolean up = state.isRunningOrRebalancing() || state == KafkaStreams.State.CREATED;
    return new HttpEndpoint.Health(up, "Kafka Streams " + state);
  }

  /**
   * Ready when Kafka Streams runs, Redis does not refuse sendcap's calls, no send waits for the
   * schema registry, and Redis answers.
   */
  private static HttpEndpoint.Health ready(
      KafkaStreams streams,
      RedisConnector redis,
      LimiterBackpressure backpressure,
      RegistryBackpressure registryOutage) {
    KafkaStreams.State state = streams.state();
    if (state != KafkaStreams.State.RUNNING) {
      return new HttpEndpoint.Health(false, "Kafka Streams " + state);
    }
    Optional<String> refusal = backpressure.refusal();
    if (refusal.isPresent()) {
      return new HttpEndpoint.Health(false, "Redis refuses sendcap's calls: " + refusal.get());
    }
    Optional<String> registry = registryOutage.health();
    if (registry.isPresent()) {
      return new HttpEndpoint.Health(false, registry.get());
    }
    try {
      redis.ping();
      return new HttpEndpoint.Health(true, "Kafka Streams RUNNING, Redis answers");
    } catch (LimiterUnavailableException e) {
      return new HttpEndpoint.Health(false, e.getMessage());
    }
  }

  private static void awaitSegments(
      SendcapConfig config,
      SegmentRegistry segments,
      KafkaStreams streams,
      LimiterBackpressure backpressure,
      RedisConnector redis,
      HttpEndpoint http) {
    List<String> missing;
    try {
      missing = segments.missing(segments.priorityOrder());
      if (!missing.isEmpty()) {
        LOG.info(
            "waiting up to {} s for segment(s) {} on topic {}",
            config.segmentsLoadTimeout().toSeconds(),
            missing,
            config.topics().segments());
        missing = segments.awaitAll(config.segmentsLoadTimeout());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      missing = segments.missing(segments.priorityOrder());
    }
    if (!missing.isEmpty()) {
      if (http != null) {
        http.close();
      }
      streams.close(Duration.ofSeconds(30));
      backpressure.close();
      redis.close();
      throw new StartupException(
          "segment(s) "
              + missing
              + " named by the policies are not on topic "
              + config.topics().segments()
              + " (waited "
              + config.segmentsLoadTimeout().toSeconds()
              + " s, segments.load.timeout.ms); publish them with: bin/sendcap segments publish",
          null);
    }
  }

  private static RedisConnector connectRedis(SendcapConfig config, MeterRegistry metrics) {
    try {
      return RedisConnector.connect(config.limiter(), metrics);
    } catch (RuntimeException e) {
      throw new StartupException(
          "cannot use Redis at " + config.limiter().where() + ": " + RedisErrors.describe(e), e);
    }
  }

  private static void requireTopics(SendcapConfig config) {
    SendcapConfig.Topics t = config.topics();
    try {
      if (new PolicyTopic(config, config.brokerTimeout()).ensureExists()) {
        LOG.info("created topic {} (compacted) for published policies", t.policies());
      }
    } catch (IllegalArgumentException e) {
      throw new StartupException(e.getMessage(), e);
    }
    List<String> problems;
    try {
      problems = new KafkaRights(config, config.brokerTimeout()).problems();
    } catch (IllegalArgumentException e) {
      throw new StartupException(e.getMessage(), e);
    }
    if (!problems.isEmpty()) {
      throw new StartupException(String.join("; ", problems), null);
    }
  }

  /** The Kafka Streams state, for health checks and tests. */
  public KafkaStreams.State state() {
    return streams.state();
  }

  /** The segments in use, for their versions. */
  public SegmentRegistry segments() {
    return segments;
  }

  /** The Redis limiter, for its call and round-trip counts. */
  public RedisConnector redis() {
    return redis;
  }

  /** The application's meters, as served on {@code /metrics}. */
  public PrometheusMeterRegistry metrics() {
    return metrics;
  }

  /** The port of the metrics and health endpoint; -1 if {@code http.port=-1}. */
  public int httpPort() {
    return http == null ? -1 : http.port();
  }

  /**
   * Stops processing: decides the sends in hand first (unless the limiter is unreachable in block
   * mode, or a send waits for the schema registry), then commits. Sends still undecided stay in the
   * input behind their task's mark, for whichever instance runs the task next. Closing again does
   * nothing.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    long inHand = undecided.count();
    LOG.info("sendcap stopping: deciding the {} sends in hand, then committing", inHand);
    if (http != null) {
      http.close();
    }
    if (backpressure.holding()) {
      LOG.warn(
          "the limiter is unreachable: {} undecided sends stay in the input behind their task's mark",
          inHand);
    } else if (registryOutage.waiting()) {
      LOG.warn(
          "the schema registry is unreachable: {} undecided sends stay in the input behind their"
              + " task's mark",
          inHand);
    } else {
      try {
        undecided.startDraining();
        long left = undecided.awaitNone(drainTimeout);
        if (left > 0) {
          LOG.warn(
              "{} sends still undecided after {} ms; they stay in the input behind their task's mark",
              left,
              drainTimeout.toMillis());
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    // Kafka Streams stops first, then a thread waiting for the schema registry gives its record
    // up: a thread that fails while its client stops is not replaced.
    streams.close(Duration.ZERO);
    registryOutage.close();
    boolean stopped = streams.close(Duration.ofSeconds(60));
    backpressure.close();
    quotas.close();
    redis.close();
    for (AutoCloseable binder : binders) {
      try {
        binder.close();
      } catch (Exception e) {
        LOG.warn("closing {} failed", binder, e);
      }
    }
    if (stopped) {
      LOG.info("sendcap stopped");
    } else {
      LOG.warn("Kafka Streams did not stop within 60 s; uncommitted work will be redone");
    }
  }

  /** The application could not start; the message says what to fix. */
  public static final class StartupException extends RuntimeException {
    StartupException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
