package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.Decision;
import io.sendcap.limit.RedisConnector;
import io.sendcap.limit.RedisSlidingLog;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class EmbeddedRedisIT {
  @Test
  void servesCommandsStopsAndRestartsOnTheSamePort() {
    try (EmbeddedRedis redis = EmbeddedRedis.start()) {
      assertThat(redis.uri()).isEqualTo("redis://127.0.0.1:" + redis.port());
      RedisClient client = RedisClient.create(redis.uri());
      try {
        try (StatefulRedisConnection<String, String> connection = client.connect()) {
          RedisCommands<String, String> redisCommands = connection.sync();
          assertThat(redisCommands.ping()).isEqualTo("PONG");
          redisCommands.set("cap:user-1", "3");
          assertThat(redisCommands.get("cap:user-1")).isEqualTo("3");
        }

        redis.stop();

        assertThat(redis.isRunning()).isFalse();
        assertThatThrownBy(client::connect).isInstanceOf(RedisConnectionException.class);

        redis.restart();

        try (StatefulRedisConnection<String, String> connection = client.connect()) {
          assertThat(connection.sync().ping()).isEqualTo("PONG");
          assertThat(connection.sync().get("cap:user-1")).as("nothing is persisted").isNull();
        }
      } finally {
        client.shutdown(0, 2, TimeUnit.SECONDS);
      }
    }
  }

  @Test
  void closeStopsTheServer() throws Exception {
    EmbeddedRedis redis = EmbeddedRedis.start();
    int port = redis.port();
    redis.close();

    assertThat(redis.isRunning()).isFalse();
    assertThatThrownBy(() -> Resp.call(port, "PING")).isInstanceOf(java.io.IOException.class);
  }

  @Test
  void theBundledServerRunsTheLimitersScriptWhereNoneIsInstalled() throws java.io.IOException {
    try (EmbeddedRedis redis =
        EmbeddedRedis.launched(
            new EmbeddedRedis(RedisBinary.bundled(), FreePorts.pick(), List.of()))) {
      assertThat(Resp.call(redis.port(), "INFO", "server")).contains("redis_version:6.2.");
      java.util.Properties p = new java.util.Properties();
      p.setProperty("cap.redis.uri", redis.uri());
      Policy policy = new Policy("p", List.of(new Cap("1d", Duration.ofDays(1), 1)), Duration.ZERO);
      try (RedisConnector connector =
              RedisConnector.connect(SendcapConfig.from(p, "test").limiter());
          RedisSlidingLog log = connector.open()) {
        List<Decision> decisions =
            log.decide(
                List.of(
                    new CapRequest(1, "a", 1_000_000, policy),
                    new CapRequest(1, "b", 1_000_001, policy)));
        assertThat(decisions)
            .extracting(Decision::outcome)
            .containsExactly(Decision.Outcome.ALLOWED, Decision.Outcome.CAPPED);
      }
    }
  }
}
