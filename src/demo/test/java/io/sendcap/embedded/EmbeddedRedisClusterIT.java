package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class EmbeddedRedisClusterIT {
  private static EmbeddedRedisCluster cluster;
  private static RedisClusterClient clusterClient;

  @BeforeAll
  static void startCluster() {
    cluster = EmbeddedRedisCluster.start();
    clusterClient =
        RedisClusterClient.create(cluster.uris().stream().map(RedisURI::create).toList());
  }

  @AfterAll
  static void stopCluster() {
    clusterClient.shutdown(0, 2, TimeUnit.SECONDS);
    cluster.close();
  }

  @Test
  void everyNodeReportsClusterStateOk() {
    assertThat(cluster.uris()).hasSize(EmbeddedRedisCluster.DEFAULT_NODES);
    for (String uri : cluster.uris()) {
      assertThat(clusterInfo(uri)).contains("cluster_state:ok");
    }
  }

  @Test
  void aKeyIsStoredOnTheNodeThatOwnsItsSlot() {
    String key = "cap:user-42";
    try (StatefulRedisClusterConnection<String, String> connection = clusterClient.connect()) {
      connection.sync().set(key, "1");
    }

    int slot = SlotHash.getSlot(key);
    int owner = cluster.nodeForSlot(slot);
    List<String> uris = cluster.uris();
    for (int node = 0; node < uris.size(); node++) {
      assertThat(keysInSlot(uris.get(node), slot))
          .as("keys of slot %d on node %d (the owner is node %d)", slot, node, owner)
          .isEqualTo(node == owner ? 1L : 0L);
    }
  }

  @Test
  void aStoppedNodeRejoinsOnRestart() {
    cluster.stop(1);
    cluster.restart(1);

    for (String uri : cluster.uris()) {
      assertThat(clusterInfo(uri)).contains("cluster_state:ok");
    }
    String key = keyOwnedBy(1);
    try (StatefulRedisClusterConnection<String, String> connection = clusterClient.connect()) {
      connection.sync().set(key, "after-restart");
      assertThat(connection.sync().get(key)).isEqualTo("after-restart");
    }
  }

  private static String keyOwnedBy(int node) {
    for (int i = 0; ; i++) {
      String key = "cap:user-" + i;
      if (cluster.nodeForSlot(SlotHash.getSlot(key)) == node) {
        return key;
      }
    }
  }

  private static String clusterInfo(String uri) {
    return onNode(uri, RedisCommands::clusterInfo);
  }

  private static long keysInSlot(String uri, int slot) {
    return onNode(uri, commands -> commands.clusterCountKeysInSlot(slot));
  }

  private static <T> T onNode(String uri, Function<RedisCommands<String, String>, T> command) {
    RedisClient client = RedisClient.create(uri);
    try (StatefulRedisConnection<String, String> connection = client.connect()) {
      return command.apply(connection.sync());
    } finally {
      client.shutdown(0, 2, TimeUnit.SECONDS);
    }
  }
}
