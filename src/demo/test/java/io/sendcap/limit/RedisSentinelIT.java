package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedisSentinel;
import io.sendcap.testing.CapturedLogs;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The limiter on a {@code redis-sentinel://} URI whose user info names an ACL user of the master:
 * the user authenticates on the master the Sentinels name, before and after a failover, the script
 * is loaded again on the promoted replica, and the password appears in no log line.
 */
class RedisSentinelIT {
  private static final long T0 = 1_790_000_000_000L;
  private static final String USER = "sendcap";
  private static final String PASSWORD = "s3ntinel-secret";
  private static final Policy POLICY =
      new Policy("default", List.of(new Cap("1d", Duration.ofDays(1), 2)), Duration.ZERO);

  @Test
  void theUriUserDecidesOnTheMasterBeforeAndAfterAFailoverWithItsPasswordHidden() {
    List<String> aclUser = List.of("--user", USER, "on", ">" + PASSWORD, "~*", "&*", "+@all");
    CapturedLogs logs = new CapturedLogs();
    try (EmbeddedRedisSentinel redis = EmbeddedRedisSentinel.start(1, aclUser)) {
      String uri =
          redis
              .uri()
              .replace("redis-sentinel://", "redis-sentinel://" + USER + ":" + PASSWORD + "@");
      Properties p = new Properties();
      p.setProperty("cap.redis.uri", uri);
      p.setProperty("cap.redis.timeout.ms", "1000");
      SendcapConfig.Limiter settings = SendcapConfig.from(p, "test").limiter();
      try (RedisConnector connector = RedisConnector.connect(settings);
          RedisSlidingLog log = connector.open()) {
        assertThat(log.decide(List.of(new CapRequest(1, "a", T0, POLICY))))
            .extracting(Decision::outcome)
            .containsExactly(Decision.Outcome.ALLOWED);
        assertThat(clients(redis, 0)).contains("user=" + USER);

        redis.kill(0);
        redis.awaitPromoted(1);
        TopicReader.await(
            "a decision on the promoted replica",
            Duration.ofSeconds(30),
            () -> decidesOnce(log, new CapRequest(1, "b", T0 + 1, POLICY)));

        assertThat(clients(redis, 1)).contains("user=" + USER);
        assertThat(connector.scriptReloads())
            .as("the script loaded again on the promoted replica")
            .isPositive();
        assertThat(connector.where()).doesNotContain(PASSWORD).contains("[hidden]");
      }
    } finally {
      logs.close();
    }
    assertThat(logs.lines())
        .anyMatch(l -> l.contains("the script was loaded again") && l.contains("[hidden]"))
        .noneMatch(l -> l.contains(PASSWORD));
  }

  /**
   * Whether the send was decided (allowed: user 1's second send of the day), or Redis not yet back.
   */
  private static boolean decidesOnce(RedisSlidingLog log, CapRequest request) {
    try {
      return log.decide(List.of(request)).get(0).outcome() == Decision.Outcome.ALLOWED;
    } catch (LimiterUnavailableException e) {
      return false;
    }
  }

  private static String clients(EmbeddedRedisSentinel redis, int node) {
    try {
      return redis.call(node, "CLIENT", "LIST");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
