package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.cluster.ClusterTopologyRefreshOptions.RefreshTrigger;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RedisConnectorTest {
  /**
   * A cluster client follows a failover only if it refreshes its topology: Lettuce 7 turns every
   * adaptive trigger on by default, which a Lettuce without that default would silently undo.
   */
  @Test
  void aClusterClientRefreshesItsTopologyOnEveryAdaptiveTriggerAndPeriodically() {
    assertThat(RedisConnector.TOPOLOGY_REFRESH.getAdaptiveRefreshTriggers())
        .containsExactlyInAnyOrder(RefreshTrigger.values())
        .contains(RefreshTrigger.MOVED_REDIRECT, RefreshTrigger.PERSISTENT_RECONNECTS);
    assertThat(RedisConnector.TOPOLOGY_REFRESH.getAdaptiveRefreshTimeout())
        .isEqualTo(Duration.ofSeconds(2));
    assertThat(RedisConnector.TOPOLOGY_REFRESH.isPeriodicRefreshEnabled()).isTrue();
    assertThat(RedisConnector.TOPOLOGY_REFRESH.getRefreshPeriod())
        .isEqualTo(Duration.ofSeconds(30));
  }
}
