package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.lettuce.core.AclSetuserArgs;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.protocol.CommandType;
import io.sendcap.avro.Channel;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.testing.GatedProxy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class RedisSlidingLogIT {
  private static final long T0 = 1_790_000_000_000L;
  private static final ZoneId KOLKATA = ZoneId.of("Asia/Kolkata");
  private static final long HOUR = Duration.ofHours(1).toMillis();
  private static final Policy POLICY =
      new Policy(
          "default",
          List.of(new Cap("1d", Duration.ofDays(1), 2), new Cap("7d", Duration.ofDays(7), 3)),
          Duration.ofHours(1));

  private static EmbeddedRedis redis;
  private static RedisConnector connector;
  private static RedisClient admin;
  private static StatefulRedisConnection<String, String> adminConnection;
  private static long nextUser = 1;

  @BeforeAll
  static void start() {
    redis = EmbeddedRedis.start();
    connector = RedisConnector.connect(settings(redis.uri(), Duration.ofMillis(1)));
    admin = RedisClient.create(redis.uri());
    adminConnection = admin.connect();
  }

  @AfterAll
  static void stop() {
    adminConnection.close();
    admin.shutdown();
    connector.close();
    redis.close();
  }

  static SendcapConfig.Limiter settings(String uri, Duration retention) {
    Properties p = new Properties();
    p.setProperty("cap.redis.uri", uri);
    p.setProperty("cap.idempotency.retention.ms", String.valueOf(retention.toMillis()));
    p.setProperty("cap.redis.timeout.ms", "2000");
    return SendcapConfig.from(p, "test").limiter();
  }

  private static RedisCommands<String, String> redisCli() {
    return adminConnection.sync();
  }

  private static CapRequest send(long user, String id, long at) {
    return new CapRequest(user, id, at, POLICY);
  }

  @Test
  void capsMinimumIntervalAndNextEligibleAtFollowTheRules() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      List<Decision> d =
          log.decide(
              List.of(
                  send(u, "a", T0),
                  send(u, "b", T0 + 30 * 60_000), // 30 min later: min interval of 1 h
                  send(u, "c", T0 + 2 * HOUR),
                  send(u, "d", T0 + 4 * HOUR), // 1d cap of 2 is full
                  send(u, "e", T0 + 25 * HOUR),
                  send(u, "f", T0 + 30 * HOUR))); // 7d cap of 3 is full
      assertThat(d.get(0).outcome()).isEqualTo(Decision.Outcome.ALLOWED);
      assertThat(d.get(1)).isEqualTo(new Decision(Decision.Outcome.MIN_INTERVAL, -1, 0, T0 + HOUR));
      assertThat(d.get(2).outcome()).isEqualTo(Decision.Outcome.ALLOWED);
      assertThat(d.get(3)).isEqualTo(new Decision(Decision.Outcome.CAPPED, 0, 2, T0 + 24 * HOUR));
      assertThat(d.get(4).outcome()).isEqualTo(Decision.Outcome.ALLOWED);
      assertThat(d.get(5))
          .isEqualTo(new Decision(Decision.Outcome.CAPPED, 1, 3, T0 + 7 * 24 * HOUR));
    }
  }

  /**
   * A batch waits for its answers no longer than its deadline, even while Redis is paused: all of a
   * batch's calls share one budget, so its stream thread is never held past it.
   */
  @Test
  void aBatchWaitsForRedisNoLongerThanItsDeadline() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(
          List.of(send(nextUser++, "first", T0))); // a new log's first batch loads the script
      redisCli().clientPause(1_000); // longer than the deadline, not than cap.redis.timeout.ms
      CapStore.Pending late = log.submit(List.of(send(u, "a", T0)), Deadline.in(Duration.ZERO));
      assertThatThrownBy(late::await)
          .isInstanceOf(LimiterUnavailableException.class)
          .hasMessageContaining("EVALSHA to Redis at");
      assertThat(log.decide(List.of(send(u, "b", T0 + HOUR))))
          .extracting(Decision::outcome)
          .as("once Redis answers, within cap.redis.timeout.ms")
          .containsExactly(Decision.Outcome.ALLOWED);
    }
  }

  /**
   * A batch is ready once Redis has answered it, or once its deadline has passed: the stream thread
   * forwards ready batches without waiting, and leaves the others in flight.
   */
  @Test
  void aBatchIsReadyOnceRedisHasAnsweredOrItsDeadlineHasPassed() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(List.of(send(nextUser++, "first", T0))); // loads the script
      redisCli().clientPause(1_000); // shorter than cap.redis.timeout.ms
      CapStore.Pending paused = log.submit(List.of(send(u, "a", T0)));
      CapStore.Pending late =
          log.submit(List.of(send(u, "b", T0 + HOUR)), Deadline.in(Duration.ZERO));
      assertThat(paused.ready()).as("a batch Redis has not answered").isFalse();
      assertThat(late.ready()).as("a batch past its deadline").isTrue();
      assertThat(paused.await())
          .extracting(Decision::outcome)
          .containsExactly(Decision.Outcome.ALLOWED);
      assertThat(paused.ready()).as("a batch Redis has answered").isTrue();
    }
  }

  /** The probe of a send a global cap refused: a replay is recognised, anything else not logged. */
  @Test
  void aProbeRecognisesAReplayAndLogsNothingElse() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(List.of(send(u, "a", T0)));
      List<Decision> d =
          log.decide(
              List.of(
                  send(u, "a", T0).asProbe(),
                  send(u, "b", T0 + HOUR).asProbe(),
                  send(u, "c", T0 + 2 * HOUR)));
      assertThat(d)
          .extracting(Decision::outcome)
          .containsExactly(
              Decision.Outcome.DUPLICATE, Decision.Outcome.NOT_A_REPLAY, Decision.Outcome.ALLOWED);
      assertThat(redisCli().zcard("s{" + u + "}")).as("a and c logged, b not").isEqualTo(2);
    }
  }

  @Test
  void calendarCapsCountTheUsersDayInTheirZoneAndReleaseAtTheNextMidnight() {
    long u = nextUser++;
    Cap day = new Cap("calendar-day", Cap.Kind.CALENDAR_DAY, Duration.ofHours(25), 1, null);
    Policy berlin = new Policy("p", List.of(day), Duration.ZERO, ZoneId.of("Europe/Berlin"));
    long midnight = Instant.parse("2026-11-02T23:00:00Z").toEpochMilli(); // 00:00 in Berlin
    try (RedisSlidingLog log = connector.open()) {
      List<CapRequest> sends =
          List.of(
              new CapRequest(u, "at-midnight", midnight, berlin),
              new CapRequest(u, "just-before", midnight - 1, berlin),
              new CapRequest(u, "ten-past", midnight + 600_000, berlin),
              new CapRequest(u, "in-kolkata", midnight + 700_000, berlin, Channel.EMAIL, KOLKATA));
      List<Decision> d = log.decide(sends);
      assertThat(d.get(0).outcome()).isEqualTo(Decision.Outcome.ALLOWED);
      assertThat(d.get(1).outcome())
          .as("a send at the next period's first millisecond does not count in this one")
          .isEqualTo(Decision.Outcome.ALLOWED);
      assertThat(d.get(2))
          .isEqualTo(new Decision(Decision.Outcome.CAPPED, 0, 1, midnight + 86_400_000));
      long kolkataMidnight = Instant.parse("2026-11-03T18:30:00Z").toEpochMilli();
      assertThat(d.get(3))
          .as("the send's zone wins over the policy's")
          .isEqualTo(new Decision(Decision.Outcome.CAPPED, 0, 2, kolkataMidnight));
      assertThat(d).isEqualTo(new SlidingLogModel(Duration.ofMillis(1)).decide(sends));
    }
  }

  @Test
  void aChannelCapCountsAndAppliesToItsChannelOnly() {
    long u = nextUser++;
    Policy policy =
        new Policy(
            "p",
            List.of(
                new Cap("1d", Duration.ofDays(1), 3),
                new Cap("1d", Cap.Kind.ROLLING, Duration.ofDays(1), 1, Channel.SMS)),
            Duration.ZERO);
    try (RedisSlidingLog log = connector.open()) {
      List<Decision> d =
          log.decide(
              List.of(
                  new CapRequest(u, "s1", T0, policy, Channel.SMS, null),
                  new CapRequest(u, "s2", T0 + 1, policy, Channel.SMS, null),
                  new CapRequest(u, "e1", T0 + 2, policy, Channel.EMAIL, null),
                  new CapRequest(u, "e2", T0 + 3, policy, Channel.EMAIL, null),
                  new CapRequest(u, "p1", T0 + 4, policy, Channel.PUSH, null)));
      assertThat(d)
          .extracting(Decision::outcome)
          .containsExactly(
              Decision.Outcome.ALLOWED,
              Decision.Outcome.CAPPED,
              Decision.Outcome.ALLOWED,
              Decision.Outcome.ALLOWED,
              Decision.Outcome.CAPPED);
      assertThat(d.get(1).capIndex()).as("the SMS cap").isEqualTo(1);
      assertThat(d.get(4).capIndex()).as("the cap of all channels").isZero();
    }
  }

  @Test
  void aReplayedSendIsAllowedAgainAndConsumesNothing() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(List.of(send(u, "a", T0)));
      List<Decision> again = log.decide(List.of(send(u, "a", T0), send(u, "a", T0 + 5 * HOUR)));
      assertThat(again).extracting(Decision::outcome).containsOnly(Decision.Outcome.DUPLICATE);
      assertThat(redisCli().zcard("s{" + u + "}")).isEqualTo(1);
    }
  }

  @Test
  void twoSendsInOneMillisecondAreTwoEntriesAndTheKeyExpiresWithTheLongestWindow() {
    long u = nextUser++;
    Policy two = new Policy("p", List.of(new Cap("1d", Duration.ofDays(1), 5)), Duration.ZERO);
    try (RedisSlidingLog log = connector.open()) {
      List<Decision> d =
          log.decide(List.of(new CapRequest(u, "x", T0, two), new CapRequest(u, "y", T0, two)));
      assertThat(d).extracting(Decision::outcome).containsOnly(Decision.Outcome.ALLOWED);
      String key = "s{" + u + "}";
      assertThat(redisCli().zcard(key)).isEqualTo(2);
      assertThat(redisCli().pttl(key))
          .isBetween(Duration.ofDays(1).toMillis() - 60_000, 86_400_000L);
    }
  }

  @Test
  void entriesOlderThanTheLongestWindowAreEvicted() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(List.of(send(u, "old", T0)));
      log.decide(List.of(send(u, "new", T0 + 8 * 24 * HOUR)));
      assertThat(redisCli().zcard("s{" + u + "}")).isEqualTo(1);
    }
  }

  @Test
  void aBatchIsOneFlushHoweverManySendsItHolds() {
    List<CapRequest> batch = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      batch.add(send(100_000 + i, "m" + i, T0));
    }
    try (RedisSlidingLog log = connector.open()) {
      long flushes = connector.flushes();
      long calls = connector.calls();
      long decisions = connector.decisions();
      assertThat(log.decide(batch)).hasSize(1000).allMatch(Decision::allowed);
      assertThat(connector.flushes() - flushes).isEqualTo(1);
      assertThat(connector.decisions() - decisions).isEqualTo(1000);
      assertThat(connector.calls() - calls).as("calls of 32 sends").isEqualTo(32);
    }
  }

  @Test
  void afterTheScriptCacheIsFlushedTheScriptIsLoadedAgainAndTheBatchDecided() {
    long u = nextUser++;
    try (RedisSlidingLog log = connector.open()) {
      log.decide(List.of(send(u, "a", T0)));
      redisCli().scriptFlush();
      List<Decision> d =
          log.decide(List.of(send(u, "b", T0 + 2 * HOUR), send(u, "c", T0 + 4 * HOUR)));
      assertThat(d)
          .extracting(Decision::outcome)
          .containsExactly(Decision.Outcome.ALLOWED, Decision.Outcome.CAPPED);
    }
  }

  @Test
  void anUnreachableRedisIsReportedAndTheSameLogWorksOnceItIsBack() {
    try (EmbeddedRedis own = EmbeddedRedis.start();
        RedisConnector c = RedisConnector.connect(settings(own.uri(), Duration.ofMillis(1)));
        RedisSlidingLog log = c.open()) {
      own.stop();
      awaitConnected(false, log); // until the client has seen the connection go
      long calls = c.calls();
      assertThatThrownBy(() -> log.decide(blast(1, 100, 1)))
          .isInstanceOf(LimiterUnavailableException.class)
          .hasMessageContaining(own.uri());
      assertThat(c.calls() - calls).as("calls sent after a command was refused").isZero();
      own.restart();
      assertThat(awaitDecision(log, send(1, "a", T0)).outcome())
          .isEqualTo(Decision.Outcome.ALLOWED);
    }
  }

  /**
   * After a restart empties Redis's script cache, every connection finds the script gone, and the
   * first to load it again loads it for all. A batch whose first calls Redis refused with NOSCRIPT
   * before another connection's SCRIPT LOAD, and whose later calls it ran after, would decide those
   * later sends first: each user's sends must still be decided in input order, as the model decides
   * them. The proxy lets Redis read the batch's first calls only, until the other connection has
   * loaded the script.
   */
  @Test
  void afterARestartABatchIsDecidedInInputOrderWhileAnotherConnectionLoadsTheScript() {
    try (EmbeddedRedis own = EmbeddedRedis.start();
        GatedProxy proxy = GatedProxy.to(own.port());
        RedisConnector viaProxy =
            RedisConnector.connect(
                settings("redis://127.0.0.1:" + proxy.port(), Duration.ofDays(1)));
        RedisConnector other = RedisConnector.connect(settings(own.uri(), Duration.ofDays(1)));
        RedisSlidingLog log = viaProxy.open();
        RedisSlidingLog otherLog = other.open()) {
      // both have decided a batch, and so loaded the script, before the restart
      log.decide(blast(1_000, 1, 1));
      otherLog.decide(blast(2_000, 1, 1));
      own.stop();
      own.restart();
      awaitConnected(true, log, otherLog);
      List<CapRequest> blast = blast(1, 200, 20);
      RedisClient watcher = RedisClient.create(own.uri());
      try (StatefulRedisConnection<String, String> watch = watcher.connect()) {
        long refusedOrRun = scriptCallsSeen(watch.sync());
        // the script, should the log load it ahead of its calls, and its first few calls
        proxy.hold(viaProxy.script().length + 20_000L);
        CapStore.Pending deciding = log.submit(blast);
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (scriptCallsSeen(watch.sync()) == refusedOrRun) {
          assertThat(System.nanoTime()).as("EVALSHA seen within 30 s").isLessThan(deadline);
        }
        otherLog.loadScript();
        proxy.release();
        assertSameDecisions(deciding.await(), modelDecisions(blast), blast);
      } finally {
        watcher.shutdown();
      }
    }
  }

  /**
   * A user's key that something other than sendcap wrote (a string SET at it): Redis answers
   * WRONGTYPE for that key only. That user's sends are refused with Redis's reason and the rest of
   * the batch, in the same script call, is decided as the model decides it; once the key is
   * removed, the user's sends are decided again.
   */
  @Test
  void aForeignKeyOfAnotherTypeCostsItsUsersSendsAndTheRestOfTheBatchIsDecided() {
    long first = nextUser;
    nextUser += 3;
    long foreign = first + 1;
    byte[] key = new UserKeys("s", 0).key(foreign);
    String keyName = new String(key, StandardCharsets.US_ASCII);
    redisCli().set(keyName, "written by another application");
    List<CapRequest> batch = blast(first, 3, 3);
    try (RedisSlidingLog log = connector.open()) {
      assertThat(log.encode(batch)).as("one script call for the whole batch").hasSize(1);
      List<Decision> decided = log.decide(batch);

      List<CapRequest> others = new ArrayList<>();
      List<Decision> othersDecided = new ArrayList<>();
      for (int i = 0; i < batch.size(); i++) {
        if (batch.get(i).userId() == foreign) {
          assertThat(decided.get(i).outcome()).isEqualTo(Decision.Outcome.KEY_REFUSED);
          assertThat(decided.get(i).reason())
              .startsWith("WRONGTYPE Operation against a key holding the wrong kind of value");
        } else {
          others.add(batch.get(i));
          othersDecided.add(decided.get(i));
        }
      }
      assertSameDecisions(othersDecided, modelDecisions(others), others);
      assertThat(redisCli().get(keyName)).as("the foreign key, untouched").isNotNull();

      redisCli().del(keyName);
      assertThat(log.decide(List.of(send(foreign, "after", T0))))
          .extracting(Decision::outcome)
          .containsExactly(Decision.Outcome.ALLOWED);
    }
  }

  /**
   * An ACL that stops allowing EVALSHA to sendcap's user while it runs: every batch fails with a
   * refusal that names NOPERM, not as an outage.
   */
  @Test
  void aCommandTheAclRefusesIsARefusalNamingNoperm() {
    String user = "capped" + nextUser++;
    redisCli()
        .aclSetuser(user, AclSetuserArgs.Builder.on().addPassword("pw").allKeys().allCommands());
    String uri = "redis://" + user + ":pw@127.0.0.1:" + redis.port();
    try (RedisConnector c = RedisConnector.connect(settings(uri, Duration.ofMillis(1)));
        RedisSlidingLog log = c.open()) {
      long u = nextUser++;
      assertThat(log.decide(List.of(send(u, "a", T0))))
          .extracting(Decision::outcome)
          .containsExactly(Decision.Outcome.ALLOWED);
      redisCli().aclSetuser(user, AclSetuserArgs.Builder.removeCommand(CommandType.EVALSHA));

      assertThatThrownBy(() -> log.decide(List.of(send(u, "b", T0 + 2 * HOUR))))
          .isInstanceOf(LimiterRefusedException.class)
          .hasMessageContaining("NOPERM")
          .hasMessageContaining("evalsha");
    } finally {
      redisCli().aclDeluser(user);
    }
  }

  /** Redis out of memory under {@code maxmemory}: a refusal naming OOM, not an outage. */
  @Test
  void redisOutOfMemoryIsARefusalNamingOom() {
    try (EmbeddedRedis own = EmbeddedRedis.start();
        RedisConnector c = RedisConnector.connect(settings(own.uri(), Duration.ofMillis(1)));
        RedisSlidingLog log = c.open()) {
      long u = nextUser++;
      log.decide(List.of(send(u, "a", T0)));
      own.call("CONFIG", "SET", "maxmemory", "1");

      assertThatThrownBy(() -> log.decide(List.of(send(u, "b", T0 + 2 * HOUR))))
          .isInstanceOf(LimiterRefusedException.class)
          .hasMessageContaining("OOM");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code sends} sends to each of {@code users} users from {@code firstUser}, 2 hours apart. */
  private static List<CapRequest> blast(long firstUser, int users, int sends) {
    List<CapRequest> blast = new ArrayList<>();
    for (int i = 0; i < sends; i++) {
      for (long u = firstUser; u < firstUser + users; u++) {
        blast.add(send(u, "m" + u + "-" + i, T0 + i * 2 * HOUR));
      }
    }
    return blast;
  }

  private static List<Decision> modelDecisions(List<CapRequest> requests) {
    SlidingLogModel model = new SlidingLogModel(Duration.ofDays(1));
    return requests.stream().map(model::decide).toList();
  }

  /** Checks each decision against the model's, naming only the sends where they differ. */
  private static void assertSameDecisions(
      List<Decision> decided, List<Decision> model, List<CapRequest> requests) {
    Map<String, String> differing = new TreeMap<>();
    for (int i = 0; i < requests.size(); i++) {
      String got = decided.get(i).outcome() + " " + decided.get(i).nextEligibleAt();
      String expected = model.get(i).outcome() + " " + model.get(i).nextEligibleAt();
      if (!got.equals(expected)) {
        differing.put(requests.get(i).messageId(), "limiter: " + got + ", model: " + expected);
      }
    }
    assertThat(differing).as("sends decided otherwise than the model decides them").isEmpty();
  }

  /** EVALSHA calls the server has run or refused since it started. */
  private static long scriptCallsSeen(RedisCommands<String, String> redis) {
    Matcher m =
        Pattern.compile("cmdstat_evalsha:calls=(\\d+),.*,rejected_calls=(\\d+),failed_calls=(\\d+)")
            .matcher(redis.info("commandstats"));
    return m.find()
        ? Long.parseLong(m.group(1)) + Long.parseLong(m.group(2)) + Long.parseLong(m.group(3))
        : 0;
  }

  /** Waits up to 30 s until each log's connection is up, or down. */
  private static void awaitConnected(boolean up, RedisSlidingLog... logs) {
    long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
    for (RedisSlidingLog log : logs) {
      while (log.isConnected() != up) {
        assertThat(System.nanoTime())
            .as(up ? "reconnected within 30 s" : "disconnected within 30 s")
            .isLessThan(deadline);
        Thread.onSpinWait();
      }
    }
  }

  /** Retries while the client reconnects; the reconnect is asynchronous. */
  private static Decision awaitDecision(RedisSlidingLog log, CapRequest request) {
    return await()
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ZERO)
        .pollInterval(Duration.ofMillis(10))
        .ignoreException(LimiterUnavailableException.class)
        .until(() -> log.decide(List.of(request)).get(0), Objects::nonNull);
  }
}
