package io.sendcap.app;

import static io.sendcap.app.FailoverBlast.USERS;
import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.sendcap.embedded.EmbeddedRedisCluster;
import io.sendcap.testing.TestKafka;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Redis Cluster of three masters with a replica each, a blast running, one master killed with
 * SIGKILL and its replica promoted by the cluster: sendcap follows the new topology, loads its
 * script on the promoted node and goes on deciding without a restart, every input decided once,
 * none while its slot had no master (block: no fail-open delivery, no LIMITER_UNAVAILABLE).
 *
 * <p>Replication is asynchronous, so the promoted replica may lack sends its master had logged: the
 * users whose deliveries then put a window above its cap are counted and printed.
 */
class RedisFailoverIT {
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
  void aMasterKilledMidBlastIsFollowedToItsPromotedReplicaAndEverySendIsDecidedOnce()
      throws Exception {
    Map<Long, String> above = failover("async", 0);
    System.out.printf(
        "RedisFailoverIT: without WAIT, %d of %d users (%.2f%%) have a window above its cap"
            + " after the failover: %s%n",
        above.size(), USERS, 100.0 * above.size() / USERS, above);
  }

  /**
   * With {@code cap.redis.wait-replicas=1} every batch's writes are on the replica before its
   * decisions are emitted, so the promotion forgets none: no user above a cap. The promoted replica
   * has no replica of its own: its batches' writes are counted as shortfalls, not waited for.
   */
  @Test
  void withWaitForOneReplicaAFailoverLetsNoUserAboveACap() throws Exception {
    Map<Long, String> above = failover("wait", 1);
    System.out.printf(
        "RedisFailoverIT: with WAIT 1, %d of %d users have a window above its cap%n",
        above.size(), USERS);
    assertThat(above).as("users above a cap after the failover, with WAIT").isEmpty();
  }

  /** Runs the blast on a cluster whose master 0 is killed and replaced by its replica, node 3. */
  private Map<Long, String> failover(String name, int waitReplicas) throws Exception {
    try (EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start(3, 1)) {
      return new FailoverBlast(kafka, dir)
          .run(
              name,
              31,
              String.join(",", cluster.uris()),
              true,
              waitReplicas,
              () -> {
                cluster.kill(0);
                cluster.awaitPromoted(3);
              },
              sha -> hasScript(cluster.uris().get(3), sha));
    }
  }

  private static boolean hasScript(String nodeUri, String sha) {
    RedisClient client = RedisClient.create(nodeUri);
    try (StatefulRedisConnection<String, String> node = client.connect()) {
      return node.sync().scriptExists(sha).get(0);
    } finally {
      client.shutdown();
    }
  }
}
