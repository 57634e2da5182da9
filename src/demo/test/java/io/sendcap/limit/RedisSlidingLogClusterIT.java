package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.MigrateArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.SlotHash;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedisCluster;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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
   * A slot moving to another node while a batch is decided: a call whose users' keys are partly
   * moved is refused with TRYAGAIN (Lettuce does not retry it), sent again until the slot has
   * moved, and decided as the model decides, every user's log having moved with it.
   */
  @Test
  void aCallRefusedWhileItsSlotMovesIsRetriedAndDecidedAsTheModelSays() throws Exception {
    UserKeys keys = new UserKeys("s", 32);
    List<Long> users = new ArrayList<>();
    int bucket = UserKeys.bucket(30_000, 32);
    for (long u = 30_000; users.size() < 20; u++) {
      if (UserKeys.bucket(u, 32) == bucket) {
        users.add(u);
      }
    }
    List<CapRequest> first = new ArrayList<>();
    List<CapRequest> second = new ArrayList<>();
    for (long u : users) {
      first.add(new CapRequest(u, "first-" + u, T0, POLICY));
      second.add(new CapRequest(u, "second-" + u, T0 + Duration.ofHours(1).toMillis(), POLICY));
    }
    // a cluster of its own: the slot ends on another node than the one it started on
    try (EmbeddedRedisCluster own = EmbeddedRedisCluster.start()) {
      int slot = SlotHash.getSlot(keys.key(users.get(0)));
      int from = own.nodeForSlot(slot);
      int to = (from + 1) % own.uris().size();
      Properties p = new Properties();
      p.setProperty("cap.redis.uri", String.join(",", own.uris()));
      p.setProperty("cap.redis.cluster", "true");
      List<RedisClient> clients = new ArrayList<>();
      List<RedisCommands<String, String>> nodes = new ArrayList<>();
      for (String uri : own.uris()) {
        RedisClient client = RedisClient.create(uri);
        clients.add(client);
        nodes.add(client.connect().sync());
      }
      try (RedisConnector c = RedisConnector.connect(SendcapConfig.from(p, "test").limiter());
          RedisSlidingLog log = c.open()) {
        assertThat(log.decide(first)).allMatch(d -> d.outcome() == Decision.Outcome.ALLOWED);
        assertThat(log.encode(second)).as("one call for the bucket's users").hasSize(1);
        String fromId = nodes.get(from).clusterMyId();
        String toId = nodes.get(to).clusterMyId();
        int port = Integer.parseInt(own.uris().get(to).replaceAll(".*:", ""));
        nodes.get(to).clusterSetSlotImporting(slot, fromId);
        nodes.get(from).clusterSetSlotMigrating(slot, toId);
        String[] half =
            users.subList(0, 10).stream()
                .map(u -> new String(keys.key(u), StandardCharsets.US_ASCII))
                .toArray(String[]::new);
        nodes.get(from).migrate("127.0.0.1", port, 0, 5_000, MigrateArgs.Builder.keys(half));

        CompletableFuture<List<Decision>> deciding =
            CompletableFuture.supplyAsync(() -> log.submit(second).await());
        await()
            .atMost(Duration.ofSeconds(20))
            .until(() -> c.slotRetries() > 0 || deciding.isDone());
        assertThat(deciding).as("refused while the slot moves").isNotDone();
        // the rest of the slot's keys, as redis-cli --cluster reshard moves them
        for (List<String> left = nodes.get(from).clusterGetKeysInSlot(slot, 100);
            !left.isEmpty();
            left = nodes.get(from).clusterGetKeysInSlot(slot, 100)) {
          nodes
              .get(from)
              .migrate(
                  "127.0.0.1",
                  port,
                  0,
                  5_000,
                  MigrateArgs.Builder.keys(left.toArray(String[]::new)));
        }
        for (RedisCommands<String, String> node : nodes) {
          node.clusterSetSlotNode(slot, toId);
        }

        List<CapRequest> both = new ArrayList<>(first);
        both.addAll(second);
        List<Decision> model = new SlidingLogModel(Duration.ofDays(1)).decide(both);
        assertThat(deciding.get(30, TimeUnit.SECONDS))
            .isEqualTo(model.subList(first.size(), both.size()))
            .allMatch(d -> d.outcome() == Decision.Outcome.CAPPED);
        assertThat(c.slotRetries()).as("calls sent again").isPositive();
      } finally {
        clients.forEach(RedisClient::shutdown);
      }
    }
  }

  /**
   * One node refusing its calls (out of memory) and the others deciding theirs: the batch fails as
   * a refusal, holding every decision the other nodes made, for the failure modes to use.
   */
  @Test
  void aBatchWhoseCallsOneNodeRefusedKeepsTheDecisionsOfTheOthers() {
    List<CapRequest> sends = batch("oom", 40_000, 300);
    int refusing = 2;
    RedisClient client = RedisClient.create(cluster.uris().get(refusing));
    try (StatefulRedisConnection<String, String> node = client.connect();
        RedisSlidingLog log = connector.open()) {
      node.sync().configSet("maxmemory", "1");
      LimiterUnavailableException e =
          catchThrowableOfType(LimiterUnavailableException.class, () -> log.decide(sends));
      node.sync().configSet("maxmemory", "0");

      assertThat(e).isInstanceOf(LimiterRefusedException.class).hasMessageContaining("OOM");
      UserKeys keys = new UserKeys("s", 32);
      for (int i = 0; i < sends.size(); i++) {
        int slot = SlotHash.getSlot(keys.key(sends.get(i).userId()));
        if (cluster.nodeForSlot(slot) == refusing) {
          assertThat(e.decided().get(i)).as("send %d, on the refusing node", i).isNull();
        } else {
          assertThat(e.decided().get(i))
              .as("send %d, on a node that decided it", i)
              .isEqualTo(new Decision(Decision.Outcome.ALLOWED, -1, 0, T0));
        }
      }
      assertThat(e.decided()).containsNull().anyMatch(d -> d != null);
    } finally {
      client.shutdown();
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
