package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedisCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The limiter on a Redis Cluster of three masters. */
class RedisSlidingLogClusterIT {
  private static final long T0 = 1_790_000_000_000L;
  private static final Policy POLICY =
      new Policy("p", List.of(new Cap("1d", Duration.ofDays(1), 1)), Duration.ZERO);

  private static EmbeddedRedisCluster cluster;
  private static RedisConnector connector;

  @BeforeAll
  static void start() {
    cluster = EmbeddedRedisCluster.start();
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", String.join(",", cluster.uris()));
    p.setProperty("cap.redis.cluster", "true");
    connector = RedisConnector.connect(SendcapConfig.from(p, "test").limiter());
  }

  @AfterAll
  static void stop() {
    connector.close();
    cluster.close();
  }

  private static List<CapRequest> batch(String prefix, int firstUser, int users) {
    List<CapRequest> batch = new ArrayList<>();
    for (int u = firstUser; u < firstUser + users; u++) {
      batch.add(new CapRequest(u, prefix + u, T0, POLICY));
    }
    return batch;
  }

  @Test
  void aBatchSpanningEveryNodeIsDecidedInOneFlushWithoutCrossSlotErrors() {
    try (RedisSlidingLog log = connector.open()) {
      long flushes = connector.flushes();
      assertThat(log.decide(batch("a", 0, 1000)))
          .allMatch(d -> d.outcome() == Decision.Outcome.ALLOWED);
      assertThat(log.decide(batch("b", 0, 1000)))
          .allMatch(d -> d.outcome() == Decision.Outcome.CAPPED);
      assertThat(connector.flushes() - flushes).isEqualTo(2);
    }
    for (String uri : cluster.uris()) {
      assertThat(keysOn(uri, u -> u < 1000)).as("keys on %s", uri).isBetween(200L, 600L);
    }
  }

  @Test
  void usersInBucketsShareScriptCallsAndTheirKeysStillSpreadOverEveryMaster() {
    long calls = connector.calls();
    long decisions = connector.decisions();
    try (RedisSlidingLog log = connector.open()) {
      assertThat(log.decide(batch("k", 50_000, 1000)))
          .allMatch(d -> d.outcome() == Decision.Outcome.ALLOWED);
    }
    assertThat(connector.decisions() - decisions).isEqualTo(1000);
    // 32 buckets by default: at most 32 slots, 32 sends per call at most, so 32 calls or a few more
    assertThat(connector.calls() - calls).isBetween(32L, 1000L / 8);
    for (String uri : cluster.uris()) {
      assertThat(keysOn(uri, u -> u >= 50_000 && u < 51_000))
          .as("keys on %s", uri)
          .isBetween(250L, 420L);
    }
  }

  @Test
  void capsOfEveryAlgorithmInOnePolicyDecideAsTheModelOnEveryNode() {
    Policy mixed =
        new Policy(
            "mixed",
            List.of(
                new Cap("1d", Duration.ofDays(1), 3),
                new Cap("1h", Duration.ofHours(1), 1, Cap.Algorithm.FIXED_WINDOW),
                new Cap("1d", Duration.ofDays(1), 2, Cap.Algorithm.SLIDING_WINDOW),
                new Cap("1d", Duration.ofDays(1), 2, Cap.Algorithm.TOKEN_BUCKET)),
            Duration.ZERO);
    long hour = Duration.ofHours(1).toMillis();
    long[] offsets = {0, hour / 2, 2 * hour, 2 * hour, 3 * hour, 30 * hour};
    List<CapRequest> sends = new ArrayList<>();
    for (int k = 0; k < offsets.length; k++) {
      for (int u = 20_000; u < 20_300; u++) {
        String id = k == 3 ? "m" + u + "-0" : "m" + u + "-" + k; // the fourth replays the first
        sends.add(new CapRequest(u, id, T0 + offsets[k], mixed));
      }
    }
    List<Decision> decisions = new ArrayList<>();
    try (RedisSlidingLog log = connector.open()) {
      for (int i = 0; i < sends.size(); i += 300) {
        decisions.addAll(log.decide(sends.subList(i, i + 300)));
      }
    }
    assertThat(decisions).isEqualTo(new SlidingLogModel(Duration.ofDays(1)).decide(sends));
    assertThat(decisions)
        .extracting(Decision::outcome)
        .contains(Decision.Outcome.ALLOWED, Decision.Outcome.DUPLICATE, Decision.Outcome.CAPPED);
  }

  @Test
  void afterEveryNodeFlushedItsScriptsTheScriptIsLoadedAgain() {
    try (RedisSlidingLog log = connector.open()) {
      for (String uri : cluster.uris()) {
        RedisClient client = RedisClient.create(uri);
        try (StatefulRedisConnection<String, String> c = client.connect()) {
          c.sync().scriptFlush();
        } finally {
          client.shutdown();
        }
      }
      assertThat(log.decide(batch("c", 10_000, 300)))
          .extracting(Decision::outcome)
          .hasSize(300)
          .containsOnly(Decision.Outcome.ALLOWED);
    }
  }

  /**
   * The keys on one node of the users {@code users} accepts: {@code s{USERID}} or {@code
   * s{TAG}USERID}.
   */
  private static long keysOn(String uri, LongPredicate users) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      return c.sync().keys("s{*}*").stream()
          .map(
              k ->
                  k.endsWith("}")
                      ? k.substring(2, k.length() - 1)
                      : k.substring(k.indexOf('}') + 1))
          .map(Long::parseLong)
          .filter(users::test)
          .count();
    } finally {
      client.shutdown();
    }
  }
}
