package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.RedisConnector;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.junit.jupiter.api.Test;

/**
 * A task that starts while Redis is down, as one assigned in a rebalance during an outage: on a
 * real {@code redis-server}, with the application's own cap stores ({@link RedisConnector#open}).
 */
class TaskStartWithoutRedisIT {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");
  private static final String POLICIES =
      """
      default:
        caps:
          - {window: 1d, limit: 1}
      """;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);

  @Test
  void aTaskStartedWhileRedisIsDownWaitsAndDecidesOnceItIsBackOverOneConnection() throws Exception {
    SimpleMeterRegistry metrics = new SimpleMeterRegistry();
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        RedisConnector connector = RedisConnector.connect(limiter(redis.uri()))) {
      SendcapConfig config = config(redis.uri());
      LivePolicies policies = new LivePolicies(Policies.parse(POLICIES, "test"), "test");
      GlobalQuotas quotas =
          new GlobalQuotas(
              connector.openQuotas(), "s", InstantSource.system(), Duration.ofSeconds(5), metrics);
      List<String> events = new ArrayList<>();
      Backpressure recorder =
          new Backpressure() {
            @Override
            public boolean holding() {
              return false;
            }

            @Override
            public void unavailable(LimiterUnavailableException cause, int waiting) {
              events.add("unavailable");
            }

            @Override
            public void answered() {
              events.add("answered");
            }
          };
      redis.stop();
      try (TopologyTestDriver driver =
          new TopologyTestDriver(
              SendcapTopology.build(
                  config,
                  policies,
                  new SegmentRegistry(policies.current().policies().segmentNames()),
                  connector::open,
                  quotas,
                  InstantSource.fixed(T0),
                  recorder,
                  RegistryOutage.NONE,
                  new Undecided(metrics),
                  metrics),
              SendcapTopology.streamsProperties(config))) {
        TestInputTopic<byte[], byte[]> input =
            driver.createInputTopic(
                "campaign-sends", new ByteArraySerializer(), new ByteArraySerializer());
        TestOutputTopic<byte[], byte[]> delivered =
            driver.createOutputTopic(
                "deliveries", new ByteArrayDeserializer(), new ByteArrayDeserializer());
        for (int user = 1; user <= 2; user++) {
          input.pipeInput(
              String.valueOf(user).getBytes(StandardCharsets.UTF_8), sends.encode(send(user)), T0);
        }
        for (int tick = 0; tick < 20; tick++) {
          driver.advanceWallClockTime(Duration.ofMillis(500));
        }
        assertThat(delivered.isEmpty()).as("nothing decided while Redis is down").isTrue();
        assertThat(events.stream().filter("unavailable"::equals).count())
            .as("batches the limiter could not decide")
            .isGreaterThan(1);

        redis.restart();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        List<byte[]> out = new ArrayList<>();
        while (out.size() < 2 && System.nanoTime() < deadline) {
          driver.advanceWallClockTime(Duration.ofMillis(500));
          out.addAll(delivered.readValuesToList());
        }
        assertThat(out).as("sends delivered once Redis is back").hasSize(2);
        try (Admin admin = new Admin(redis.uri())) {
          assertThat(admin.clients())
              .as(
                  "connections after %d batches failed to open one: the task's, the test's, and"
                      + " the global caps' once it has reconnected",
                  events.stream().filter("unavailable"::equals).count())
              .isBetween(2L, 3L);
        }
      } finally {
        quotas.close();
      }
    }
  }

  private static ScheduledSend send(long user) {
    return ScheduledSend.newBuilder()
        .setMessageId("m" + user)
        .setCampaignId("c1")
        .setUserId(user)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(T0)
        .build();
  }

  private static Properties settings(String uri) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", "unused:9092");
    p.setProperty("processing.guarantee", "at_least_once");
    p.setProperty("cap.clock", "event");
    p.setProperty("cap.redis.uri", uri);
    p.setProperty("cap.redis.timeout.ms", "2000");
    p.setProperty("batch.max.records", "2");
    p.setProperty("batch.max.wait.ms", "1000");
    return p;
  }

  private static SendcapConfig config(String uri) {
    return SendcapConfig.from(settings(uri), "test");
  }

  private static SendcapConfig.Limiter limiter(String uri) {
    return config(uri).limiter();
  }

  /** A connection of the test's own, counting the server's clients. */
  private static final class Admin implements AutoCloseable {
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    Admin(String uri) {
      client = RedisClient.create(uri);
      connection = client.connect();
    }

    long clients() {
      return connection.sync().clientList().lines().filter(l -> !l.isBlank()).count();
    }

    @Override
    public void close() {
      connection.close();
      client.shutdown();
    }
  }
}
