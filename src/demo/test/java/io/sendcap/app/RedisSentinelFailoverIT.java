package io.sendcap.app;

import static io.sendcap.app.FailoverBlast.USERS;
import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.embedded.EmbeddedRedisSentinel;
import io.sendcap.testing.TestKafka;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A standalone Redis master with one replica and three Sentinels, sendcap given the Sentinels'
 * {@code redis-sentinel://} URI, a blast running, the master killed with SIGKILL and the replica
 * promoted by the Sentinels: sendcap reconnects to the master the Sentinels name, loads its script
 * there and goes on deciding without a restart, every input decided once, none while there was no
 * master (block).
 *
 * <p>Replication is asynchronous, so the promoted replica may lack sends its master had logged: the
 * users whose deliveries then put a window above its cap are counted and printed.
 */
class RedisSentinelFailoverIT {
  private static final int SENTINELS = 3;

  private static TestKafka kafka;
  @TempDir static Path dir;

  @BeforeAll
  static void start() throws IOException {
    kafka = TestKafka.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
  }

  @AfterAll
  static void stop() {
    kafka.close();
  }

  @Test
  void aMasterKilledMidBlastIsFollowedToTheReplicaSentinelPromotesAndEverySendIsDecidedOnce()
      throws Exception {
    Map<Long, String> above = failover("async", 0);
    System.out.printf(
        "RedisSentinelFailoverIT: without WAIT, %d of %d users (%.2f%%) have a window above its"
            + " cap after the failover: %s%n",
        above.size(), USERS, 100.0 * above.size() / USERS, above);
  }

  /**
   * With {@code cap.redis.wait-replicas=1} every batch's writes are on the replica before its
   * decisions are emitted, so the promotion forgets none: no user above a cap. The promoted replica
   * has no replica of its own (its ROLE lists none): its batches are counted as shortfalls, not
   * waited for.
   */
  @Test
  void withWaitForOneReplicaASentinelFailoverLetsNoUserAboveACap() throws Exception {
    Map<Long, String> above = failover("wait", 1);
    System.out.printf(
        "RedisSentinelFailoverIT: with WAIT 1, %d of %d users have a window above its cap%n",
        above.size(), USERS);
    assertThat(above).as("users above a cap after the failover, with WAIT").isEmpty();
  }

  private static boolean scriptExists(EmbeddedRedisSentinel redis, String sha) {
    try {
      return redis.call(1, "SCRIPT", "EXISTS", sha).equals("1");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Runs the blast on a Sentinel-managed master, killed and replaced by its replica. */
  private Map<Long, String> failover(String name, int waitReplicas) throws Exception {
    try (EmbeddedRedisSentinel redis = EmbeddedRedisSentinel.start(SENTINELS)) {
      return new FailoverBlast(kafka, dir)
          .run(
              "sentinel-" + name,
              37,
              redis.uri(),
              false,
              waitReplicas,
              () -> {
                redis.kill(0);
                redis.awaitPromoted(1);
              },
              sha -> scriptExists(redis, sha));
    }
  }
}
