package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRedisCluster;
import java.time.Duration;
import java.util.Properties;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * What the limiter's client costs Redis in connections: readiness probes share one, and a task that
 * cannot connect to every master of a cluster leaves none behind.
 */
class RedisConnectorIT {
  private static final int PROBES = 20;

  @Test
  void readinessProbesShareOneConnection() {
    try (EmbeddedRedis redis = EmbeddedRedis.start();
        RedisConnector connector = RedisConnector.connect(settings(redis.uri(), false));
        Admin admin = new Admin(redis.uri())) {
      connector.ping(); // the probe's connection, if it keeps one, is open from here on
      long received = admin.stat("total_connections_received");
      for (int i = 0; i < PROBES; i++) {
        connector.ping();
      }
      assertThat(admin.stat("total_connections_received") - received)
          .as("connections opened by %d probes", PROBES)
          .isZero();
    }
  }

  @Test
  void aTaskThatCannotReachEveryClusterMasterLeavesNoConnectionOpen() {
    try (EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start();
        RedisConnector connector =
            RedisConnector.connect(settings(String.join(",", cluster.uris()), true));
        Admin first = new Admin(cluster.uris().get(0));
        Admin second = new Admin(cluster.uris().get(1))) {
      cluster.stop(2);
      LongSupplier clients =
          () -> first.stat("connected_clients") + second.stat("connected_clients");
      long before = clients.getAsLong();
      for (int i = 0; i < PROBES; i++) {
        assertThatThrownBy(connector::open)
            .isInstanceOf(LimiterUnavailableException.class)
            .hasMessageContaining("cannot connect to Redis");
        assertThatThrownBy(connector::ping).isInstanceOf(LimiterUnavailableException.class);
      }
      // closing is asynchronous: give what is closed the time to go
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (clients.getAsLong() > before + 1 && System.nanoTime() < deadline) {
        Thread.onSpinWait();
      }
      assertThat(clients.getAsLong())
          .as("clients of the running masters after %d failed openings and probes", 2 * PROBES)
          .isLessThanOrEqualTo(before + 1);
      cluster.restart(2);
      try (RedisSlidingLog log = connector.open()) {
        log.ping();
      }
    }
  }

  private static SendcapConfig.Limiter settings(String uris, boolean cluster) {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", uris);
    p.setProperty("cap.redis.cluster", String.valueOf(cluster));
    p.setProperty("cap.redis.timeout.ms", "2000");
    return SendcapConfig.from(p, "test").limiter();
  }

  /** A connection of the test's own to one server, for its {@code INFO} figures. */
  private static final class Admin implements AutoCloseable {
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;

    Admin(String uri) {
      client = RedisClient.create(uri);
      connection = client.connect();
    }

    long stat(String field) {
      RedisCommands<String, String> sync = connection.sync();
      for (String line : sync.info("everything").split("\r\n")) {
        if (line.startsWith(field + ":")) {
          return Long.parseLong(line.substring(field.length() + 1).trim());
        }
      }
      throw new IllegalStateException("no " + field + " in INFO");
    }

    @Override
    public void close() {
      connection.close();
      client.shutdown();
    }
  }
}
