package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How many replicas a ROLE reply gives a master, which decides whether a batch WAITs. */
class RoleRepliesTest {
  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.US_ASCII);
  }

  @Test
  void aMasterHasTheReplicasItLists() {
    List<Object> replica = List.of(bytes("127.0.0.1"), bytes("6380"), bytes("1234"));
    assertThat(RedisSlidingLog.replicasOf(List.of(bytes("master"), 1234L, List.of(replica))))
        .isOne();
    assertThat(RedisSlidingLog.replicasOf(List.of(bytes("master"), 1234L, List.of()))).isZero();
  }

  @Test
  void aReplicaOrAnEmptyReplyHasNone() {
    assertThat(
            RedisSlidingLog.replicasOf(
                List.of(bytes("slave"), bytes("127.0.0.1"), 6379L, bytes("connected"), 1234L)))
        .isZero();
    assertThat(RedisSlidingLog.replicasOf(List.of())).isZero();
  }
}
