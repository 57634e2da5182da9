package io.sendcap.app;

import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.RedisConnector;
import io.sendcap.segment.RoaringSegmentIndex;
import io.sendcap.segment.SegmentFiles;
import io.sendcap.topology.SendcapTopology;
import java.time.Duration;
import java.time.InstantSource;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A running sendcap instance: the policies, the segment index, the Redis limiter and the Kafka
 * Streams application that uses them.
 */
public final class SendcapApp implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SendcapApp.class);
  private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(30);

  private final RedisConnector redis;
  private final KafkaStreams streams;

  private SendcapApp(RedisConnector redis, KafkaStreams streams) {
    this.redis = redis;
    this.streams = streams;
  }

  /**
   * Validates everything the application needs, then starts it.
   *
   * @throws StartupException if the topics, segment files or Redis are not there to use
   */
  public static SendcapApp start(SendcapConfig config) {
    Policies policies = Policies.load(config.policiesFile());
    RoaringSegmentIndex segments = loadSegments(config, policies);
    requireTopics(config);
    RedisConnector redis = connectRedis(config);
    Properties props = SendcapTopology.streamsProperties(config);
    KafkaStreams streams =
        new KafkaStreams(
            SendcapTopology.build(config, policies, segments, redis::open, InstantSource.system()),
            props);
    streams.setUncaughtExceptionHandler(
        e -> {
          LOG.error("stream thread failed; replacing it, its tasks resume from the last commit", e);
          return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
    streams.start();
    LOG.info(
        "sendcap started: {} -> {} | {}, DLQ {}; Redis {}{}, clock {}, failure mode {}",
        config.topics().input(),
        config.topics().deliveries(),
        config.topics().suppressed(),
        config.topics().deadLetters(),
        config.limiter().uris(),
        config.limiter().cluster() ? " (cluster)" : "",
        config.limiter().clock(),
        config.limiter().failureMode());
    return new SendcapApp(redis, streams);
  }

  private static RoaringSegmentIndex loadSegments(SendcapConfig config, Policies policies) {
    try {
      RoaringSegmentIndex index = SegmentFiles.load(config.segmentsDir(), policies.segmentNames());
      index
          .segments()
          .forEach(
              (name, ids) ->
                  LOG.info(
                      "segment {}: {} users, {} bytes",
                      name,
                      ids.cardinality(),
                      ids.sizeInBytes()));
      return index;
    } catch (SegmentFiles.SegmentFileException e) {
      throw new StartupException(e.getMessage(), e);
    }
  }

  private static RedisConnector connectRedis(SendcapConfig config) {
    try {
      return RedisConnector.connect(config.limiter());
    } catch (RuntimeException e) {
      throw new StartupException(
          "cannot reach Redis at " + config.limiter().uris() + ": " + e.getMessage(), e);
    }
  }

  private static void requireTopics(SendcapConfig config) {
    SendcapConfig.Topics t = config.topics();
    List<String> needed = List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters());
    Properties props = new Properties();
    props.putAll(config.streams());
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis());
    try (Admin admin = Admin.create(props)) {
      Set<String> existing =
          admin.listTopics().names().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
      List<String> missing = needed.stream().filter(n -> !existing.contains(n)).toList();
      if (!missing.isEmpty()) {
        throw new StartupException(
            "missing topic(s) " + missing + "; create them before starting sendcap", null);
      }
    } catch (ExecutionException | TimeoutException e) {
      throw new StartupException(
          "cannot reach Kafka at " + props.get("bootstrap.servers") + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StartupException("interrupted while checking topics", e);
    }
  }

  /** The Kafka Streams state, for health checks and tests. */
  public KafkaStreams.State state() {
    return streams.state();
  }

  /** The Redis limiter, for its call and round-trip counts. */
  public RedisConnector redis() {
    return redis;
  }

  /** Stops processing, committing what has been decided; undecided sends stay in the buffer. */
  @Override
  public void close() {
    LOG.info("sendcap stopping: committing what is decided; undecided sends stay buffered");
    boolean stopped = streams.close(Duration.ofSeconds(60));
    redis.close();
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
