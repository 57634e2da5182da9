package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * {@code cap.redis.wait-replicas} on a master and its replica: a batch is decided once the replica
 * has its writes, and one whose writes the replica does not acknowledge within {@code
 * cap.redis.wait-timeout.ms} (the replica stalled with DEBUG SLEEP) is counted as a shortfall and
 * decided all the same.
 */
class RedisWaitReplicasIT {
  private static final long T0 = 1_790_000_000_000L;
  private static final Policy POLICY =
      new Policy("default", List.of(new Cap("1d", Duration.ofDays(1), 2)), Duration.ZERO);

  @Test
  void aBatchWaitsForTheReplicaAndAStalledReplicaIsCountedNotWaitedForever() throws Exception {
    try (EmbeddedRedis master = EmbeddedRedis.start();
        EmbeddedRedis replica =
            EmbeddedRedis.startWith(
                List.of(
                    "--replicaof",
                    "127.0.0.1",
                    String.valueOf(master.port()),
                    "--enable-debug-command",
                    "yes"))) {
      TopicReader.await(
          "the replica's link to its master",
          Duration.ofSeconds(30),
          () -> info(replica).contains("master_link_status:up"));
      Properties p = new Properties();
      p.setProperty("cap.redis.uri", master.uri());
      p.setProperty("cap.redis.wait-replicas", "1");
      p.setProperty("cap.redis.wait-timeout.ms", "300");
      SendcapConfig.Limiter settings = SendcapConfig.from(p, "test").limiter();
      try (RedisConnector connector = RedisConnector.connect(settings);
          RedisSlidingLog log = connector.open()) {
        List<Decision> first = log.decide(List.of(new CapRequest(1, "a", T0, POLICY)));
        assertThat(first).extracting(Decision::outcome).containsExactly(Decision.Outcome.ALLOWED);
        assertThat(connector.waitShortfalls()).as("the replica acknowledged").isZero();

        // 1.5 s: longer than the WAIT's 300 ms, shorter than the harness's 2 s read timeout
        CompletableFuture.runAsync(() -> stall(replica, "1.5"));
        TopicReader.await("the replica to stall", Duration.ofSeconds(10), () -> !answers(replica));
        List<Decision> second = log.decide(List.of(new CapRequest(2, "b", T0, POLICY)));
        assertThat(second).extracting(Decision::outcome).containsExactly(Decision.Outcome.ALLOWED);
        assertThat(connector.waitShortfalls()).as("the stalled replica's WAIT, counted").isOne();
        TopicReader.await(
            "the replica to answer again", Duration.ofSeconds(10), () -> answers(replica));
      }
    }
  }

  /** DEBUG SLEEP on {@code redis}: it answers nothing, replication included, meanwhile. */
  private static void stall(EmbeddedRedis redis, String seconds) {
    try {
      redis.call("DEBUG", "SLEEP", seconds);
    } catch (IOException e) {
      // the reply comes after the sleep; whether it arrives does not matter here
    }
  }

  private static String info(EmbeddedRedis redis) {
    return call(redis, "INFO", "replication");
  }

  /** Whether the server answers a PING within a moment (DEBUG SLEEP blocks it). */
  private static boolean answers(EmbeddedRedis redis) {
    try {
      return CompletableFuture.supplyAsync(() -> call(redis, "PING"))
          .get(100, java.util.concurrent.TimeUnit.MILLISECONDS)
          .equals("PONG");
    } catch (Exception e) {
      return false;
    }
  }

  private static String call(EmbeddedRedis redis, String... command) {
    try {
      return redis.call(command);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
