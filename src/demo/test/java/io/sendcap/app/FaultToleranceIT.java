package io.sendcap.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.blast.KafkaTopics;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import io.sendcap.embedded.EmbeddedRedisCluster;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.AppProgress;
import io.sendcap.testing.ForkedSendcap;
import io.sendcap.testing.NewerSchema;
import io.sendcap.testing.TopicReader;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Faults in the middle of a blast of 100,000 sends over 10,000 users, on a real broker and real
 * Redis: after each, every input record appears exactly once across deliveries, suppressed and the
 * dead-letter topic, no user holds more allowed sends in any window than the cap, and the same
 * sends are allowed as in the same blast run without faults.
 *
 * <p>Every case has topics and Redis keys of its own; the broker is shared and restarted by one
 * case. Decisions use the event clock, so that a blast decides the same whatever the timing.
 */
class FaultToleranceIT {
  private static final int SENDS = 100_000;
  private static final int USERS = 10_000;
  private static final Duration DEADLINE = Duration.ofMinutes(5);
  private static final Duration STARTUP = Duration.ofMinutes(2);

  private static final CapScenario scenario = new CapScenario();
  private static EmbeddedKafka kafka;
  private static EmbeddedRedis redis;
  private static List<ProducerRecord<byte[], byte[]>> blast;
  private static List<CapScenario.Outcome> withoutFaults;
  @TempDir static Path dir;

  @BeforeAll
  static void start() throws IOException {
    kafka = EmbeddedKafka.start(dir.resolve("kafka"));
    redis = EmbeddedRedis.start();
    CapScenario.writeFiles(dir);
    CapScenario.publishSegments(kafka.bootstrapServers());
    blast = scenario.records("blast", SENDS, USERS, 0, 200, 11);
    Case clean = new Case("clean");
    try (SendcapApp app = SendcapApp.start(clean.config(clean.settings(redis.uri()), "a"))) {
      clean.produce(blast);
      clean.awaitDecisions();
    }
    withoutFaults = clean.everything();
  }

  @AfterAll
  static void stop() {
    redis.close();
    kafka.close();
  }

  @Test
  void theBlastWithoutFaultsIsDecidedAsTheRulesSay() {
    scenario.assertEachInputOnce(blast, withoutFaults);
    Duration retention = Duration.ofDays(1);
    scenario.assertDecisionsMatchTheModel(scenario.sendsOf(blast), withoutFaults, retention);
    scenario.assertNoWindowHoldsMoreThanItsCap(withoutFaults);
  }

  @Test
  void anInstanceKilledWithSigkillMidBlastIsRestartedAndNothingIsLostOrCountedTwice()
      throws Exception {
    Case c = new Case("kill");
    Path config = c.writeConfig(c.settings(redis.uri()));
    try (ForkedSendcap first = c.fork(config, "first")) {
      c.produce(blast);
      c.reader.awaitRecords(SENDS / 3, DEADLINE);
      first.kill();
      // Its one producer is dead: beyond what it committed lies only its open transaction, which
      // the broker aborts.
      assertThat(c.reader.readToEnd(DEADLINE)).as("the kill came mid-blast").hasSizeLessThan(SENDS);
      try (ForkedSendcap second = c.fork(config, "second")) {
        c.awaitDecisions();
      }
    }
    assertSameAsWithoutFaults(c.everything());
  }

  @Test
  void underAtLeastOnceAKilledInstanceMayRepeatOutputsButCountsNothingTwice() throws Exception {
    Case c = new Case("alo");
    Properties settings = c.settings(redis.uri());
    settings.setProperty("processing.guarantee", "at_least_once");
    Path config = c.writeConfig(settings);
    Map<String, Long> inputs = scenario.idsOf(blast);
    try (ForkedSendcap first = c.fork(config, "first")) {
      c.produce(blast);
      c.reader.awaitRecords(SENDS / 3, DEADLINE);
      first.kill();
      try (ForkedSendcap second = c.fork(config, "second")) {
        c.reader.awaitUntil(
            "a decision of every input",
            DEADLINE,
            records ->
                records.size() >= SENDS
                    && c.outcomes(records).stream()
                        .map(CapScenario.Outcome::messageId)
                        .collect(Collectors.toSet())
                        .containsAll(inputs.keySet()));
      }
    }
    List<CapScenario.Outcome> outcomes = c.everything();
    Map<String, Long> outputs = new HashMap<>();
    outcomes.forEach(o -> outputs.merge(o.messageId(), 1L, Long::sum));
    assertThat(outputs.keySet()).as("every input decided").isEqualTo(inputs.keySet());
    assertThat(outputs).allSatisfy((id, n) -> assertThat(n).isGreaterThanOrEqualTo(inputs.get(id)));
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
    assertThat(CapScenario.allowedById(outcomes)).isEqualTo(CapScenario.allowedById(withoutFaults));
  }

  @Test
  void instancesJoiningAndLeavingMidBlastOnARedisClusterLoseNothingAndCountNothingTwice()
      throws Exception {
    Case c = new Case("scale");
    try (EmbeddedRedisCluster cluster = EmbeddedRedisCluster.start()) {
      Properties p = c.settings(String.join(",", cluster.uris()));
      p.setProperty("cap.redis.cluster", "true");
      // Kafka Streams keeps a stateful task on the instance whose store is caught up, giving the
      // newcomer only a warm-up replica until a probing rebalance (every 10 minutes) when the
      // pending-sends changelog lags more than this; the case is two instances deciding side by
      // side, so every instance counts as caught up.
      p.setProperty("acceptable.recovery.lag", String.valueOf(Long.MAX_VALUE));
      long decidedByFirst;
      long decidedBySecond;
      SendcapApp first = SendcapApp.start(c.config(p, "first"));
      SendcapApp second = null;
      try {
        // the second half is produced once both instances share the partitions: however fast the
        // first decides, the one that joined has sends of its own to decide
        c.produce(blast.subList(0, SENDS / 2));
        c.reader.awaitRecords(SENDS / 4, DEADLINE);
        second = SendcapApp.start(c.config(p, "second"));
        // Joined: the second instance reads partitions of its own before the first one leaves.
        AppProgress.awaitGroupStable(
            kafka.bootstrapServers(), "sendcap-scale", 2, "sends-scale", DEADLINE);
        c.produce(blast.subList(SENDS / 2, blast.size()));
        c.reader.awaitRecords(SENDS / 2, DEADLINE);
        decidedByFirst = first.redis().decisions();
        first.close();
        first = null;
        c.awaitDecisions();
        decidedBySecond = second.redis().decisions();
      } finally {
        closeAll(first, second);
      }
      assertThat(decidedByFirst).as("decided by the first instance").isPositive();
      assertThat(decidedBySecond).as("decided by the instance that joined").isPositive();
      assertSameAsWithoutFaults(c.everything());
    }
  }

  @Test
  void redisStoppedForSecondsMidBlastHoldsTheBlastBackWhichGoesOnOnceRedisIsBack() {
    Case c = new Case("redis");
    try (EmbeddedRedis own = EmbeddedRedis.start();
        SendcapApp app = SendcapApp.start(c.config(c.settings(own.uri()), "a"))) {
      c.produce(blast.subList(0, SENDS / 2));
      c.reader.awaitRecords(SENDS / 3, DEADLINE);
      own.stopKeepingData();
      // The rest is produced after the stop: the first half may all be decided by then (outputs
      // show a second after their decision, at the commit), and with nothing left to decide the
      // application would never call Redis and see the outage.
      c.produce(blast.subList(SENDS / 2, blast.size()));
      TopicReader.await("the limiter gauge to show the outage", STARTUP, () -> unavailable(app));
      int atOutage = AppProgress.awaitOutputsCommitted(app.metrics(), c.reader, DEADLINE).size();
      // That nothing is decided while Redis is down can only be seen over an interval: it starts
      // at the application's report of the outage and lasts fifty rounds of its stream thread's
      // loop, so that a slower machine gives the application as many chances to decide.
      AppProgress.awaitStreamThreadRounds(app.metrics(), 50, DEADLINE);
      int afterRounds = AppProgress.awaitOutputsCommitted(app.metrics(), c.reader, DEADLINE).size();
      assertThat(afterRounds).as("nothing decided while Redis is down").isEqualTo(atOutage);
      assertThat(atOutage).as("the outage came mid-blast").isLessThan(SENDS);
      assertThat(unavailable(app)).isTrue();
      own.restart();
      c.awaitDecisions();
      assertThat(unavailable(app)).as("the gauge after recovery").isFalse();
      assertThat(app.metrics().get("sendcap.limiter.outages").counter().count()).isEqualTo(1.0);
    }
    assertSameAsWithoutFaults(c.everything());
  }

  @Test
  void theBrokerRestartedMidBlastLosesNothingAndCountsNothingTwice() {
    Case c = new Case("broker");
    try (SendcapApp app = SendcapApp.start(c.config(c.settings(redis.uri()), "a"))) {
      c.produce(blast);
      c.reader.awaitRecords(SENDS / 3, DEADLINE);
      kafka.stop();
      kafka.restart();
      c.awaitDecisions();
    }
    assertSameAsWithoutFaults(c.everything());
  }

  @Test
  void onePercentOfEachKindOfPoisonGoesToTheDeadLetterTopicWithItsReasonAndTheRestFlows()
      throws IOException {
    Poisoned poisoned = Poisoned.of(blast, new SplittableRandom(5));
    Case c = new Case("poison");
    Path avsc = dir.resolve("ScheduledSend-newer.avsc");
    Files.writeString(avsc, NewerSchema.SCHEMA.toString(true));
    Properties p = c.settings(redis.uri());
    p.setProperty("avro.writer-schemas", avsc.toString());
    try (SendcapApp app = SendcapApp.start(c.config(p, "a"))) {
      c.produce(poisoned.records());
      c.reader.awaitRecords(SENDS, DEADLINE);
    }
    List<ConsumerRecord<byte[], byte[]>> records =
        c.reader.readToEndOnceNoTransactionIsOpen(DEADLINE);
    List<CapScenario.Outcome> outcomes = c.outcomes(records);
    scenario.assertEachInputOnce(poisoned.records(), outcomes);
    Map<Poison, Integer> dead = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      if (r.topic().equals("dlq-poison")) {
        Poison kind = poisoned.kinds().get(scenario.idOf(r.value()));
        assertThat(kind).as("a dead letter that was not poisoned").isNotNull();
        assertThat(header(r, "__streams.errors.message")).contains(kind.reason);
        dead.merge(kind, 1, Integer::sum);
      }
    }
    for (Poison kind : Poison.values()) {
      assertThat(dead.get(kind)).as("dead letters of kind %s", kind).isEqualTo(SENDS / 100);
    }
    scenario.assertDecisionsMatchTheModel(poisoned.valid(), outcomes, Duration.ofDays(1));
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
  }

  private static void closeAll(SendcapApp... apps) {
    for (SendcapApp app : apps) {
      if (app != null) {
        app.close();
      }
    }
  }

  private static boolean unavailable(SendcapApp app) {
    return app.metrics().get("sendcap.limiter.unavailable").gauge().value() == 1.0;
  }

  private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }

  private static void assertSameAsWithoutFaults(List<CapScenario.Outcome> outcomes) {
    scenario.assertEachInputOnce(blast, outcomes);
    scenario.assertNoWindowHoldsMoreThanItsCap(outcomes);
    Map<String, Boolean> allowed = CapScenario.allowedById(outcomes);
    Map<String, Boolean> expected = CapScenario.allowedById(withoutFaults);
    assertThat(allowed.values().stream().filter(a -> a).count())
        .as("sends allowed")
        .isEqualTo(expected.values().stream().filter(a -> a).count());
    assertThat(allowed).as("which sends were allowed").isEqualTo(expected);
    assertThat(outcomes)
        .as("no send delivered unchecked")
        .noneMatch(o -> o.detail() instanceof Delivery d && d.getFailOpen());
  }

  /** The kinds of poison record and the reason each gets in its dead-letter headers. */
  private enum Poison {
    NOT_AVRO("not a io.sendcap.avro.ScheduledSend in Avro single-object encoding"),
    UNKNOWN_SCHEMA("Cannot resolve schema for fingerprint"),
    MISSING_MESSAGE_ID("messageId is missing"),
    EMPTY_MESSAGE_ID("messageId is empty"),
    NEGATIVE_USER_ID("is negative"),
    UNKNOWN_CHANNEL("channel WHATSAPP is not one of [EMAIL, PUSH, SMS, IN_APP]"),
    SCHEDULED_FAR_AWAY("is more than cap.max-skew.ms=604800000 from the record's timestamp");

    final String reason;

    Poison(String reason) {
      this.reason = reason;
    }
  }

  /**
   * A blast with 1% of its records replaced by each kind of poison.
   *
   * @param records the records to produce
   * @param kinds the kind of each poison record, by its id ({@link CapScenario#idOf})
   * @param valid the sends that remain, in order
   */
  private record Poisoned(
      List<ProducerRecord<byte[], byte[]>> records,
      Map<String, Poison> kinds,
      List<ScheduledSend> valid) {
    private static final SingleObjectAvroSerde<ScheduledSend> SENDS_SERDE =
        new SingleObjectAvroSerde<>(ScheduledSend.class);
    private static final SingleObjectAvroSerde<Delivery> DELIVERIES =
        new SingleObjectAvroSerde<>(Delivery.class);

    static Poisoned of(List<ProducerRecord<byte[], byte[]>> clean, SplittableRandom random) {
      List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>(clean);
      Map<Integer, Poison> at = new HashMap<>();
      for (Poison kind : Poison.values()) {
        while (at.values().stream().filter(kind::equals).count() < clean.size() / 100) {
          at.putIfAbsent(random.nextInt(clean.size()), kind);
        }
      }
      Map<String, Poison> kinds = new HashMap<>();
      List<ScheduledSend> valid = new ArrayList<>();
      for (int i = 0; i < clean.size(); i++) {
        ProducerRecord<byte[], byte[]> r = clean.get(i);
        ScheduledSend send = SENDS_SERDE.decode(r.value());
        Poison kind = at.get(i);
        if (kind == null) {
          valid.add(send);
          continue;
        }
        ProducerRecord<byte[], byte[]> bad = poison(kind, r, send, i);
        records.set(i, bad);
        kinds.put(scenario.idOf(bad.value()), kind);
      }
      return new Poisoned(records, kinds, valid);
    }

    private static ProducerRecord<byte[], byte[]> poison(
        Poison kind, ProducerRecord<byte[], byte[]> r, ScheduledSend send, int i) {
      String id = "poison-" + kind + "-" + i;
      byte[] value =
          switch (kind) {
            case NOT_AVRO -> id.getBytes(StandardCharsets.UTF_8);
            case UNKNOWN_SCHEMA ->
                DELIVERIES.encode(
                    Delivery.newBuilder()
                        .setSend(ScheduledSend.newBuilder(send).setMessageId(id).build())
                        .setSegment("default")
                        .setDecidedAt(send.getScheduledAt())
                        .build());
            case MISSING_MESSAGE_ID ->
                NewerSchema.encode(null, id, send.getUserId(), "EMAIL", send.getScheduledAt());
            case EMPTY_MESSAGE_ID ->
                SENDS_SERDE.encode(
                    ScheduledSend.newBuilder(send).setMessageId("").setCampaignId(id).build());
            case NEGATIVE_USER_ID ->
                SENDS_SERDE.encode(
                    ScheduledSend.newBuilder(send)
                        .setMessageId(id)
                        .setUserId(-send.getUserId())
                        .build());
            case UNKNOWN_CHANNEL ->
                NewerSchema.encode(id, "c", send.getUserId(), "WHATSAPP", send.getScheduledAt());
            case SCHEDULED_FAR_AWAY ->
                // stamped when produced, like every record here, and scheduled a month later
                SENDS_SERDE.encode(
                    ScheduledSend.newBuilder(send)
                        .setMessageId(id)
                        .setScheduledAt(send.getScheduledAt().plus(Duration.ofDays(30)))
                        .build());
          };
      return new ProducerRecord<>(r.topic(), null, r.timestamp(), r.key(), value);
    }
  }

  /** A blast's own topics, Redis keys and application id, and the reader of its outputs. */
  private static final class Case {
    final String name;
    final TopicReader reader;

    Case(String name) {
      this.name = name;
      List<String> topics =
          List.of("sends-" + name, "deliveries-" + name, "suppressed-" + name, "dlq-" + name);
      KafkaTopics.create(kafka.bootstrapServers(), 4, topics);
      try (Admin admin =
          Admin.create(
              Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
        // A new topic reaches the broker a little after it is created. Until its leader serves a
        // partition, an idempotent producer's first request to it is refused, and a later one
        // accepted; the first is then out of sequence and retried until it expires, its records
        // lost (KAFKA-15591). The blast is produced only once every partition answers.
        TopicReader.await(
            "the partitions of " + topics + " to be served", STARTUP, () -> served(admin, topics));
      }
      this.reader =
          new TopicReader(
              kafka.bootstrapServers(), "deliveries-" + name, "suppressed-" + name, "dlq-" + name);
    }

    /** Whether the broker knows the topics and the leader of each of their partitions answers. */
    private static boolean served(Admin admin, List<String> topics) {
      try {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        admin
            .describeTopics(topics)
            .allTopicNames()
            .get()
            .forEach(
                (topic, description) ->
                    description
                        .partitions()
                        .forEach(
                            p ->
                                latest.put(
                                    new TopicPartition(topic, p.partition()),
                                    OffsetSpec.latest())));
        admin.listOffsets(latest).all().get();
        return true;
      } catch (ExecutionException e) {
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted", e);
      }
    }

    Properties settings(String redisUri) {
      Properties p =
          CapScenario.settings(dir, kafka.bootstrapServers(), redisUri, "sendcap-" + name);
      p.setProperty("topic.input", "sends-" + name);
      p.setProperty("topic.deliveries", "deliveries-" + name);
      p.setProperty("topic.suppressed", "suppressed-" + name);
      p.setProperty("topic.dlq", "dlq-" + name);
      p.setProperty("cap.redis.key-prefix", name);
      return p;
    }

    /** The settings of one instance, with a state directory of its own. */
    SendcapConfig config(Properties settings, String instance) {
      Properties p = new Properties();
      p.putAll(settings);
      p.setProperty("state.dir", dir.resolve("state-" + name + "-" + instance).toString());
      return CapScenario.config(p, "");
    }

    Path writeConfig(Properties settings) throws IOException {
      Path file = dir.resolve(name + ".properties");
      try (Writer out = Files.newBufferedWriter(file)) {
        settings.store(out, name);
      }
      return file;
    }

    ForkedSendcap fork(Path config, String instance) {
      return ForkedSendcap.start(
          config,
          dir.resolve(name + "-" + instance + ".log"),
          STARTUP,
          "state.dir=" + dir.resolve("state-" + name + "-" + instance));
    }

    void produce(List<ProducerRecord<byte[], byte[]>> records) {
      CapScenario.produce(
          kafka.bootstrapServers(),
          records.stream()
              .map(
                  r ->
                      new ProducerRecord<>(
                          "sends-" + name, null, r.timestamp(), r.key(), r.value()))
              .toList());
    }

    /** Waits until as many outputs are committed as the blast has sends. */
    void awaitDecisions() {
      reader.awaitRecords(SENDS, DEADLINE);
    }

    /**
     * Every output of the case, once every instance has stopped: read to the end once no
     * transaction is open, which is all there will ever be.
     */
    List<CapScenario.Outcome> everything() {
      return outcomes(reader.readToEndOnceNoTransactionIsOpen(DEADLINE));
    }

    List<CapScenario.Outcome> outcomes(List<ConsumerRecord<byte[], byte[]>> records) {
      return scenario.outcomes(records, "deliveries-" + name, "suppressed-" + name);
    }
  }
}
