package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.PolicyRecords;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.CapRequest;
import io.sendcap.limit.CapStore;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import io.sendcap.limit.QuotaCounters;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.testing.NewerSchema;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SendcapTopologyTest {
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");
  private static final long NEW_USER = 7;
  private static final String POLICIES =
      """
      segments:
        - name: new-users
          caps:
            - {window: 1d, limit: 1}
      default:
        caps:
          - {window: 1d, limit: 2}
          - {window: 7d, limit: 3}
      """;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Delivery> deliveries =
      new SingleObjectAvroSerde<>(Delivery.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);
  private final SlidingLogModel model = new SlidingLogModel(Duration.ZERO);
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private final Undecided undecided = new Undecided(metrics);
  private final QuotaCounters quotaCounters = new QuotaCounters();
  private LivePolicies policies;
  private TopologyTestDriver driver;
  private TestInputTopic<String, byte[]> publishedPolicies;
  private TestInputTopic<byte[], byte[]> input;
  private TestOutputTopic<byte[], byte[]> delivered;
  private TestOutputTopic<byte[], byte[]> suppressed;
  private TestOutputTopic<byte[], byte[]> dlq;

  /** This instance's wall clock: T0 unless a test moves it. */
  private Instant wallNow = T0;

  private final InstantSource wall = () -> wallNow;

  private void start(int batchRecords) {
    start(batchRecords, new Properties(), () -> model, Backpressure.NONE);
  }

  private void start(
      int batchRecords, Properties extra, Supplier<CapStore> store, Backpressure backpressure) {
    Properties props = new Properties();
    props.setProperty("bootstrap.servers", "unused:9092");
    props.setProperty("cap.clock", "event");
    // TopologyTestDriver drops dead-letter records under exactly_once_v2; PipelineIT checks them
    // with exactly-once on a real broker.
    props.setProperty("processing.guarantee", "at_least_once");
    props.setProperty("batch.max.records", String.valueOf(batchRecords));
    props.setProperty("batch.max.wait.ms", "1000");
    props.putAll(extra);
    SendcapConfig config = SendcapConfig.from(props, "test");
    UserIds newUsers = new UserIds();
    newUsers.add(NEW_USER);
    policies = new LivePolicies(Policies.parse(POLICIES, "test"), "test");
    SegmentRegistry registry = new SegmentRegistry(policies.current().policies().segmentNames());
    policies.onChange(p -> registry.prioritize(p.segmentNames()));
    driver =
        new TopologyTestDriver(
            SendcapTopology.build(
                config,
                policies,
                registry,
                store,
                new GlobalQuotas(
                    quotaCounters, "s", InstantSource.fixed(T0), Duration.ofSeconds(5), metrics),
                wall,
                backpressure,
                RegistryOutage.NONE,
                undecided,
                metrics),
            SendcapTopology.streamsProperties(config));
    TestInputTopic<String, byte[]> segments =
        driver.createInputTopic("segments", new StringSerializer(), new ByteArraySerializer());
    for (SegmentRecords.Entry e : SegmentRecords.publish("new-users", 1, newUsers, 1024, 0)) {
      segments.pipeInput(e.key(), e.value());
    }
    ByteArraySerializer ser = new ByteArraySerializer();
    ByteArrayDeserializer de = new ByteArrayDeserializer();
    publishedPolicies =
        driver.createInputTopic("policies", new StringSerializer(), new ByteArraySerializer());
    input = driver.createInputTopic("campaign-sends", ser, ser);
    delivered = driver.createOutputTopic("deliveries", de, de);
    suppressed = driver.createOutputTopic("suppressed", de, de);
    dlq = driver.createOutputTopic("campaign-sends-dlq", de, de);
  }

  @AfterEach
  void close() {
    driver.close();
  }

  private static ScheduledSend send(String id, long user, Duration after) {
    return ScheduledSend.newBuilder()
        .setMessageId(id)
        .setCampaignId("c1")
        .setUserId(user)
        .setChannel(Channel.EMAIL)
        .setScheduledAt(T0.plus(after))
        .build();
  }

  /**
   * Pipes a send as a campaign engine produces it: ahead of when it is due, stamped with the time
   * it is produced, T0 on this test's clock.
   */
  private void pipe(ScheduledSend s) {
    pipe(s, new RecordHeaders());
  }

  private void pipe(ScheduledSend s, Headers headers) {
    input.pipeInput(
        new TestRecord<>(
            String.valueOf(s.getUserId()).getBytes(StandardCharsets.UTF_8),
            sends.encode(s),
            headers,
            T0));
  }

  /**
   * Lets the punctuator forward the batch in flight: a flushed batch's decisions are forwarded at
   * the next flush or punctuation (every half of batch.max.wait.ms, at most 100 ms).
   */
  private void settle() {
    driver.advanceWallClockTime(Duration.ofMillis(500));
  }

  private List<String> deliveredIds() {
    settle();
    return delivered.readValuesToList().stream()
        .map(b -> deliveries.decode(b).getSend().getMessageId())
        .toList();
  }

  @Test
  void sendsOverTheCapAreSuppressedWithTheCapAndWhenTheUserIsEligibleAgain() {
    start(1);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 1, Duration.ofHours(1)));
    pipe(send("c", 1, Duration.ofHours(2)));

    assertThat(deliveredIds()).containsExactly("a", "b");
    Suppression s = suppressions.decode(suppressed.readValue());
    assertThat(s.getSend().getMessageId()).isEqualTo("c");
    assertThat(s.getReason()).isEqualTo(SuppressionReason.CAP);
    assertThat(s.getCapWindow()).isEqualTo("1d");
    assertThat(s.getCapLimit()).isEqualTo(2);
    assertThat(s.getCapCount()).isEqualTo(2);
    assertThat(s.getSegment()).isEqualTo("default");
    assertThat(s.getNextEligibleAt()).isEqualTo(T0.plus(Duration.ofDays(1)));
    assertThat(s.getDecidedAt()).isEqualTo(T0.plus(Duration.ofHours(2)));
    assertThat(
            metrics
                .get("sendcap.sends.allowed")
                .tags("segment", "default", "channel", "EMAIL", "fail_open", "false")
                .counter()
                .count())
        .isEqualTo(2.0);
    assertThat(
            metrics
                .get("sendcap.sends.suppressed")
                .tags("segment", "default", "channel", "EMAIL", "reason", "CAP", "shadow", "false")
                .counter()
                .count())
        .isEqualTo(1.0);
  }

  @Test
  void aUserInASegmentGetsThatSegmentsPolicy() {
    start(1);
    pipe(send("a", NEW_USER, Duration.ZERO));
    pipe(send("b", NEW_USER, Duration.ofHours(1)));
    settle();

    Delivery d = deliveries.decode(delivered.readValue());
    assertThat(d.getSegment()).isEqualTo("new-users");
    Suppression s = suppressions.decode(suppressed.readValue());
    assertThat(s.getSegment()).isEqualTo("new-users");
    assertThat(s.getCapLimit()).isEqualTo(1);
  }

  @Test
  void transactionalSendsBypassCapsAndConsumeNoQuota() {
    start(1);
    for (int i = 0; i < 4; i++) {
      ScheduledSend s = send("t" + i, 1, Duration.ofMinutes(i));
      s.setTransactional(true);
      pipe(s);
    }
    pipe(send("m1", 1, Duration.ofMinutes(10)));
    pipe(send("m2", 1, Duration.ofMinutes(11)));

    assertThat(deliveredIds()).containsExactly("t0", "t1", "t2", "t3", "m1", "m2");
    assertThat(suppressed.isEmpty()).isTrue();
  }

  @Test
  void aReplayedSendIsDeliveredAgainWithoutConsumingQuota() {
    start(1);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 1, Duration.ofHours(1)));

    assertThat(deliveredIds()).containsExactly("a", "a", "b");
    assertThat(model.logged(1)).isEqualTo(2);
  }

  /**
   * Tracing and correlation ids travel in headers: every output of a send carries its input
   * record's headers, in order, duplicates and null values included, also when the batch is decided
   * from the punctuator rather than while its last record is processed.
   */
  @Test
  void theInputRecordsHeadersAreCarriedToEveryOutput() {
    Properties shadow = new Properties();
    shadow.setProperty("cap.mode", "shadow");
    start(3, shadow, () -> model, Backpressure.NONE);
    List<String> ids = List.of("a", "b", "c", "");
    for (int i = 0; i < ids.size(); i++) {
      RecordHeaders headers = new RecordHeaders();
      headers.add("traceparent", ("00-trace" + i + "-01").getBytes(StandardCharsets.UTF_8));
      headers.add("correlation-id", ("corr-" + i).getBytes(StandardCharsets.UTF_8));
      headers.add("correlation-id", ("corr-" + i + "-again").getBytes(StandardCharsets.UTF_8));
      headers.add("empty", null);
      pipe(send(ids.get(i), 1, Duration.ofHours(i)), headers);
    }
    RecordHeaders none = new RecordHeaders();
    pipe(send("no-headers", 2, Duration.ZERO), none); // flushed once it has waited 1 s
    driver.advanceWallClockTime(Duration.ofSeconds(1));
    settle();

    List<TestRecord<byte[], byte[]>> out = delivered.readRecordsToList();
    assertThat(out)
        .extracting(r -> deliveries.decode(r.value()).getSend().getMessageId())
        .containsExactly("a", "b", "c", "no-headers"); // c capped, delivered in shadow mode
    List<TestRecord<byte[], byte[]>> capped = suppressed.readRecordsToList();
    assertThat(capped).hasSize(1);
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(1); // the empty messageId
    for (int i = 0; i < 3; i++) {
      assertThat(headerList(out.get(i)))
          .containsExactly(
              "traceparent=00-trace" + i + "-01",
              "correlation-id=corr-" + i,
              "correlation-id=corr-" + i + "-again",
              "empty=null");
      assertThat(out.get(i).timestamp()).isEqualTo(T0.toEpochMilli());
    }
    assertThat(headerList(capped.get(0))).isEqualTo(headerList(out.get(2)));
    assertThat(headerList(dead.get(0)))
        .startsWith(
            "traceparent=00-trace3-01",
            "correlation-id=corr-3",
            "correlation-id=corr-3-again",
            "empty=null");
    assertThat(out.get(3).headers().toArray()).isEmpty();
  }

  private static List<String> headerList(TestRecord<byte[], byte[]> record) {
    List<String> list = new ArrayList<>();
    for (Header h : record.headers()) {
      list.add(
          h.key()
              + "="
              + (h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8)));
    }
    return list;
  }

  @Test
  void unreadableRecordsGoToTheDeadLetterTopicWithTheReasonAndTheRestFlows() {
    start(1);
    byte[] garbage = "not avro".getBytes(StandardCharsets.UTF_8);
    input.pipeInput("1".getBytes(StandardCharsets.UTF_8), garbage);
    ScheduledSend empty = send("", 1, Duration.ZERO);
    pipe(empty);
    ScheduledSend martian = send("tz", 1, Duration.ZERO);
    martian.setUserTimeZone("Mars/Olympus");
    pipe(martian);
    ScheduledSend longCampaign = send("long", 1, Duration.ZERO);
    longCampaign.setCampaignId("c".repeat(Policies.MAX_CAMPAIGN_ID + 1));
    pipe(longCampaign);
    pipe(send("ok", 1, Duration.ZERO));

    settle();
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(4);
    assertThat(dead.get(0).value()).isEqualTo(garbage);
    assertThat(header(dead.get(0), "__streams.errors.message"))
        .contains("not a io.sendcap.avro.ScheduledSend");
    // bad data, not a fault of the code: the trace is the reason, not the deserializer's frames
    assertThat(header(dead.get(0), "__streams.errors.stacktrace"))
        .isEqualToIgnoringNewLines(
            "io.sendcap.serde.UnreadableRecordException: "
                + header(dead.get(0), "__streams.errors.message"));
    assertThat(header(dead.get(2), "__streams.errors.stacktrace")).doesNotContain("\tat ");
    assertThat(header(dead.get(1), "__streams.errors.message")).contains("messageId is empty");
    assertThat(header(dead.get(1), "__streams.errors.offset")).isEqualTo("1");
    assertThat(header(dead.get(2), "__streams.errors.message"))
        .isEqualTo("userTimeZone \"Mars/Olympus\" is not a time zone id");
    assertThat(header(dead.get(3), "__streams.errors.message"))
        .isEqualTo("campaignId has 257 characters, more than 256");
    assertThat(deliveredIds()).containsExactly("ok");
  }

  @Test
  void sendsWithValuesSendcapCannotUseGoToTheDeadLetterTopicWithTheReason(@TempDir Path dir)
      throws IOException {
    Path avsc = dir.resolve("ScheduledSend-v2.avsc");
    Files.writeString(avsc, NewerSchema.SCHEMA.toString(true));
    Properties props = new Properties();
    props.setProperty("avro.writer-schemas", avsc.toString());
    props.setProperty("cap.max-skew.ms", String.valueOf(Duration.ofDays(1).toMillis()));
    start(1, props, () -> model, Backpressure.NONE);

    input.pipeInput(key(1), NewerSchema.encode("w1", "c1", 1, "WHATSAPP", T0), T0);
    input.pipeInput(key(1), NewerSchema.encode(null, "c1", 1, "EMAIL", T0), T0);
    input.pipeInput(key(1), NewerSchema.encode("v2-ok", "c1", 1, "EMAIL", T0), T0);
    input.pipeInput(key(1), (byte[]) null, T0);
    input.pipeInput(key(1), sends.encode(send("skewed-ok", 1, Duration.ZERO)), T0.plusSeconds(1));
    ScheduledSend late = send("late", 1, Duration.ZERO);
    input.pipeInput(key(1), sends.encode(late), T0.plus(Duration.ofDays(2)));

    settle();
    List<String> reasons =
        dlq.readRecordsToList().stream().map(r -> header(r, "__streams.errors.message")).toList();
    assertThat(reasons).hasSize(4);
    String cannotHold =
        "a io.sendcap.avro.ScheduledSend whose values sendcap's schema cannot hold: ";
    assertThat(reasons.get(0))
        .isEqualTo(cannotHold + "channel WHATSAPP is not one of [EMAIL, PUSH, SMS, IN_APP]");
    assertThat(reasons.get(1)).isEqualTo(cannotHold + "messageId is missing");
    assertThat(reasons.get(2)).isEqualTo("record has no value (a tombstone is not a send)");
    assertThat(reasons.get(3))
        .isEqualTo(
            "scheduledAt 2026-11-02T09:00:00Z is more than cap.max-skew.ms=86400000 from the"
                + " record's timestamp 2026-11-04T09:00:00Z");
    assertThat(deliveredIds()).containsExactly("v2-ok", "skewed-ok");
  }

  private static byte[] key(long user) {
    return String.valueOf(user).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void inBlockModeSendsWaitWhileTheLimiterIsUnreachableAndAreDecidedInOrderOnceItAnswers() {
    AtomicBoolean down = new AtomicBoolean(true);
    AtomicBoolean holding = new AtomicBoolean();
    List<String> events = new ArrayList<>();
    CapStore flaky =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            if (down.get()) {
              throw new LimiterUnavailableException("connection refused", null);
            }
            return model.submit(requests);
          }

          @Override
          public void close() {}
        };
    Backpressure recorder =
        new Backpressure() {
          @Override
          public boolean holding() {
            return holding.get();
          }

          @Override
          public void unavailable(LimiterUnavailableException cause, int waiting) {
            holding.set(true);
            events.add("unavailable " + waiting);
          }

          @Override
          public void answered() {
            events.add("answered");
          }
        };
    start(2, new Properties(), () -> flaky, recorder);

    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 1, Duration.ofHours(1)));
    pipe(send("c", 1, Duration.ofHours(2)));
    pipe(send("d", 2, Duration.ZERO));
    settle();
    assertThat(delivered.isEmpty() && suppressed.isEmpty())
        .as("nothing decided while down")
        .isTrue();
    assertThat(events).as("the first batch failed; all four wait").containsExactly("unavailable 4");

    down.set(false);
    holding.set(false);
    settle();
    assertThat(deliveredIds()).containsExactly("a", "b", "d");
    assertThat(suppressions.decode(suppressed.readValue()).getSend().getMessageId()).isEqualTo("c");
    assertThat(events).containsExactly("unavailable 4", "answered");
  }

  /**
   * A task that starts while Redis is down (a rebalance during an outage) starts anyway: its sends
   * wait as any batch the limiter cannot decide does, and its store is opened once Redis answers,
   * once.
   */
  @Test
  void aTaskStartedWhileTheLimiterIsUnreachableWaitsAndOpensItsStoreOnceItAnswers() {
    AtomicBoolean down = new AtomicBoolean(true);
    AtomicInteger opened = new AtomicInteger();
    AtomicBoolean holding = new AtomicBoolean();
    List<String> events = new ArrayList<>();
    Supplier<CapStore> opener =
        () -> {
          if (down.get()) {
            throw new LimiterUnavailableException("cannot connect to Redis", null);
          }
          opened.incrementAndGet();
          return model;
        };
    Backpressure recorder =
        new Backpressure() {
          @Override
          public boolean holding() {
            return holding.get();
          }

          @Override
          public void unavailable(LimiterUnavailableException cause, int waiting) {
            holding.set(true);
            events.add("unavailable " + waiting);
          }

          @Override
          public void answered() {
            events.add("answered");
          }
        };
    start(2, new Properties(), opener, recorder);

    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 2, Duration.ZERO));
    settle();
    assertThat(delivered.isEmpty()).as("nothing decided while down").isTrue();
    assertThat(events).containsExactly("unavailable 2");

    down.set(false);
    holding.set(false);
    pipe(send("c", 3, Duration.ZERO));
    assertThat(deliveredIds()).containsExactly("a", "b", "c");
    assertThat(opened).as("stores opened").hasValue(1);
  }

  /**
   * A store that decides as the model does, but refuses every send of user {@code foreign} with
   * Redis's WRONGTYPE, as the script answers for a key another application wrote.
   */
  private CapStore refusingTheKeyOf(long foreign) {
    return new CapStore() {
      @Override
      public Pending submit(List<CapRequest> requests) {
        List<Decision> decided = new ArrayList<>();
        for (CapRequest r : requests) {
          decided.add(
              r.userId() == foreign
                  ? Decision.keyRefused(
                      "WRONGTYPE Operation against a key holding the wrong kind of value", r.now())
                  : model.decide(r));
        }
        return () -> decided;
      }

      @Override
      public void close() {}
    };
  }

  @Test
  void sendsOfAUserWhoseRedisKeyIsForeignGoToTheDeadLetterTopicWithTheReasonAndTheRestAreDecided() {
    start(5, new Properties(), () -> refusingTheKeyOf(2), Backpressure.NONE);
    pipe(send("a", 1, Duration.ZERO));
    RecordHeaders traced = new RecordHeaders();
    traced.add("traceparent", "00-trace-01".getBytes(StandardCharsets.UTF_8));
    pipe(send("x", 2, Duration.ZERO), traced);
    pipe(send("b", 1, Duration.ofHours(1)));
    pipe(send("y", 2, Duration.ofHours(1)));
    pipe(send("c", 1, Duration.ofHours(2)));

    assertThat(deliveredIds()).containsExactly("a", "b");
    assertThat(suppressions.decode(suppressed.readValue()).getReason())
        .isEqualTo(SuppressionReason.CAP);
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead)
        .extracting(r -> sends.decode(r.value()).getMessageId())
        .containsExactly("x", "y");
    assertThat(header(dead.get(0), "__streams.errors.message"))
        .startsWith("Redis cannot use the key of user 2")
        .contains("cap.redis.key-prefix")
        .endsWith("WRONGTYPE Operation against a key holding the wrong kind of value");
    assertThat(header(dead.get(0), "__streams.errors.offset")).isEqualTo("1");
    assertThat(header(dead.get(1), "__streams.errors.offset")).isEqualTo("3");
    assertThat(header(dead.get(0), "__streams.errors.topic")).isEqualTo("campaign-sends");
    assertThat(header(dead.get(0), "traceparent")).isEqualTo("00-trace-01");
    assertThat(
            metrics.get("sendcap.sends.dead.letters").tag("reason", "redis-key").counter().count())
        .isEqualTo(2);
  }

  /**
   * A batch that Redis decided in part (one of its calls failed) under {@code allow}: the sends
   * Redis decided are delivered or suppressed as it decided them, never delivered fail-open; only
   * the others are.
   */
  @Test
  void inAllowModeTheSendsRedisDecidedInAPartlyFailedBatchAreNotDeliveredFailOpen() {
    CapStore halfAnswered =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            List<Decision> decided = new ArrayList<>();
            for (CapRequest r : requests) {
              decided.add(r.userId() == 2 ? null : model.decide(r));
            }
            return () -> {
              throw new LimiterUnavailableException(
                  "EVALSHA to Redis at [redis://n2] failed: Connection closed", null, decided);
            };
          }

          @Override
          public void close() {}
        };
    Properties allow = new Properties();
    allow.setProperty("cap.redis.failure-mode", "allow");
    start(5, allow, () -> halfAnswered, Backpressure.NONE);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("x", 2, Duration.ZERO));
    pipe(send("b", 1, Duration.ofHours(1)));
    pipe(send("c", 1, Duration.ofHours(2)));
    pipe(send("y", 2, Duration.ofHours(1)));

    settle();
    assertThat(delivered.readValuesToList().stream().map(deliveries::decode))
        .extracting(d -> d.getSend().getMessageId(), Delivery::getFailOpen)
        .containsExactly(tuple("a", false), tuple("x", true), tuple("b", false), tuple("y", true));
    assertThat(suppressed.readValuesToList().stream().map(suppressions::decode))
        .extracting(s -> s.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(tuple("c", SuppressionReason.CAP));
  }

  @Test
  void aBatchIsHeldUntilFullOrUntilItsOldestSendHasWaitedTheMaximum() {
    start(3);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 2, Duration.ZERO));
    pipe(send("c", 3, Duration.ZERO));
    assertThat(delivered.isEmpty()).as("full and submitted, decided at the next tick").isTrue();
    driver.advanceWallClockTime(Duration.ofMillis(500));
    assertThat(delivered.readValuesToList()).hasSize(3);

    pipe(send("d", 4, Duration.ZERO));
    driver.advanceWallClockTime(Duration.ofMillis(999));
    assertThat(delivered.isEmpty()).as("d has waited 999 of 1000 ms").isTrue();
    driver.advanceWallClockTime(Duration.ofMillis(600));
    driver.advanceWallClockTime(Duration.ofMillis(500));
    assertThat(delivered.readValuesToList()).hasSize(1);
  }

  @Test
  void inShadowModeCappedSendsAreDeliveredAndReportedAsShadowSuppressions() {
    Properties shadow = new Properties();
    shadow.setProperty("cap.mode", "shadow");
    start(1, shadow, () -> model, Backpressure.NONE);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 1, Duration.ofHours(1)));
    pipe(send("c", 1, Duration.ofHours(2)));

    assertThat(deliveredIds()).containsExactly("a", "b", "c");
    Suppression s = suppressions.decode(suppressed.readValue());
    assertThat(s.getSend().getMessageId()).isEqualTo("c");
    assertThat(s.getShadow()).isTrue();
    assertThat(s.getReason()).isEqualTo(SuppressionReason.CAP);
    assertThat(suppressed.isEmpty()).isTrue();
    assertThat(
            metrics
                .get("sendcap.sends.suppressed")
                .tags("segment", "default", "reason", "CAP", "shadow", "true")
                .counter()
                .count())
        .isEqualTo(1.0);
    assertThat(metrics.get("sendcap.sends.allowed").counters())
        .extracting(c -> c.count())
        .containsExactly(3.0);
  }

  @Test
  void policiesPublishedWhileRunningDecideTheSendsThatFollow() {
    start(1);
    pipe(send("a", NEW_USER, Duration.ZERO));
    pipe(send("b", NEW_USER, Duration.ofHours(1)));
    assertThat(deliveredIds()).containsExactly("a");
    suppressed.readValuesToList();

    publish(
        """
        segments:
          - name: new-users
            caps:
              - {window: 1d, limit: 3}
        default:
          caps:
            - {window: 1d, limit: 2}
        """);
    assertThat(policies.current().version()).isEqualTo(1);
    pipe(send("c", NEW_USER, Duration.ofHours(2)));
    pipe(send("d", NEW_USER, Duration.ofHours(3)));
    pipe(send("e", NEW_USER, Duration.ofHours(4)));

    assertThat(deliveredIds()).containsExactly("c", "d");
    Suppression s = suppressions.decode(suppressed.readValue());
    assertThat(s.getSend().getMessageId()).isEqualTo("e");
    assertThat(s.getCapLimit()).isEqualTo(3);
  }

  @Test
  void invalidPublishedPoliciesAreCountedAndTheVersionInUseStays() {
    start(1);
    publish(
        """
        segments: []
        default:
          caps:
            - {window: 1d, limit: 0}
        """);

    assertThat(policies.current().version()).isZero();
    assertThat(metrics.get("sendcap.policies.rejected").counter().count()).isEqualTo(1.0);
    pipe(send("a", NEW_USER, Duration.ZERO));
    pipe(send("b", NEW_USER, Duration.ofHours(1)));
    assertThat(deliveredIds()).containsExactly("a");
  }

  @Test
  void aShutdownDrainDecidesTheBatchInHandAndEachSendAfterIt() {
    Properties slow = new Properties();
    slow.setProperty("batch.max.wait.ms", "60000");
    start(100, slow, () -> model, Backpressure.NONE);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 2, Duration.ZERO));
    assertThat(undecided.count()).isEqualTo(2);

    undecided.startDraining();
    driver.advanceWallClockTime(Duration.ofSeconds(30));
    assertThat(delivered.readValuesToList())
        .as("decided at the first tick, though they waited only 30 of 60 s")
        .hasSize(2);
    assertThat(undecided.count()).isZero();

    pipe(send("c", 3, Duration.ZERO));
    assertThat(delivered.readValuesToList()).hasSize(1);
    assertThat(undecided.count()).isZero();
  }

  /**
   * batch.max.pending-bytes bounds what a task holds unflushed as batch.max.pending does in sends:
   * a batch of large sends is flushed once it holds an eighth of the bound, long before
   * batch.max.records, and while Redis has not answered the batch in flight the task holds sends up
   * to the bound, then waits for that batch.
   */
  @Test
  void largeSendsAreFlushedByTheirBytesAndATaskHoldsNoMoreThanBatchMaxPendingBytesUnflushed() {
    int size = sends.encode(large(100)).length;
    int bound = 10 * size;
    CapStore slow =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            Pending decided = model.submit(requests);
            return new Pending() {
              @Override
              public List<Decision> await() {
                return decided.await();
              }

              @Override
              public boolean ready() {
                return false; // Redis has not answered yet: only a task that must wait waits
              }
            };
          }

          @Override
          public void close() {}
        };
    Properties extra = new Properties();
    extra.setProperty("batch.max.pending", "100000");
    extra.setProperty("cap.max-send-bytes", String.valueOf(2 * size));
    extra.setProperty("batch.max.pending-bytes", String.valueOf(bound));
    start(1000, extra, () -> slow, Backpressure.NONE);

    List<Integer> decided = new ArrayList<>();
    long mostHeld = 0;
    int forwarded = 0;
    for (int i = 1; i <= 22; i++) {
      pipe(large(100 + i));
      forwarded += delivered.readValuesToList().size();
      decided.add(forwarded);
      long held = (long) metrics.get("sendcap.sends.undecided.bytes").gauge().value();
      assertThat(held).as("after send %d", i).isEqualTo((long) (i - forwarded) * size);
      mostHeld = Math.max(mostHeld, held);
    }
    // 2 sends (an eighth of the bound) flushed; 10 more held (the bound), so the first 2 forwarded
    // and the 10 flushed; 10 more, so those 10 forwarded
    assertThat(decided.subList(0, 11)).containsOnly(0);
    assertThat(decided.subList(11, 21)).containsOnly(2);
    assertThat(decided.get(21)).isEqualTo(12);
    assertThat(mostHeld)
        .as("less than the bound and one send unflushed, and as much in its one batch in flight")
        .isLessThan(2L * (bound + size));
  }

  /** A send of a user of its own whose encoding is about 4 KB, the same size for each {@code n}. */
  private static ScheduledSend large(int n) {
    ScheduledSend s = send("m" + n, n, Duration.ZERO);
    s.setAttributes(Map.of("body", "x".repeat(4000)));
    return s;
  }

  @Test
  void aFullGlobalCapSuppressesUntilItsWindowEndsAndSendsCappedPerUserConsumeNone() {
    start(1);
    publish(
        """
        segments:
          - name: new-users
            caps:
              - {window: 1d, limit: 1}
        default:
          caps:
            - {window: 1d, limit: 2}
        global:
          - {name: email-budget, per: channel, channel: EMAIL, window: 1d, limit: 3}
        """);
    pipe(send("a", NEW_USER, Duration.ZERO));
    pipe(send("b", NEW_USER, Duration.ofMinutes(1))); // capped per user: no token used
    pipe(send("c", 1, Duration.ofMinutes(2)));
    pipe(send("d", 2, Duration.ofMinutes(3)));
    pipe(send("e", 3, Duration.ofMinutes(4))); // the fourth email of the day
    ScheduledSend push = send("f", 4, Duration.ofMinutes(5));
    push.setChannel(Channel.PUSH);
    pipe(push);

    assertThat(deliveredIds()).containsExactly("a", "c", "d", "f");
    List<Suppression> capped =
        suppressed.readValuesToList().stream().map(suppressions::decode).toList();
    assertThat(capped).extracting(s -> s.getSend().getMessageId()).containsExactly("b", "e");
    Suppression global = capped.get(1);
    assertThat(global.getReason()).isEqualTo(SuppressionReason.GLOBAL_CAP);
    assertThat(global.getGlobalCap()).isEqualTo("email-budget:EMAIL");
    assertThat(global.getCapLimit()).isEqualTo(3);
    assertThat(global.getCapWindow()).isEqualTo("1d");
    assertThat(global.getNextEligibleAt()).isEqualTo(Instant.parse("2026-11-03T00:00:00Z"));
  }

  @Test
  void aSendTheGlobalCapRefusedGetsTheTokenASendCappedPerUserInItsBatchGaveBack() {
    start(5);
    pipeABatchThatRunsTheBudgetOut();

    assertThat(deliveredIds()).containsExactly("a", "c", "d");
    List<Suppression> capped =
        suppressed.readValuesToList().stream().map(suppressions::decode).toList();
    assertThat(capped)
        .extracting(s -> s.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(
            tuple("b", SuppressionReason.CAP), tuple("e", SuppressionReason.GLOBAL_CAP));
    assertThat(undecided.count()).isZero();
  }

  /**
   * Sends scheduled days ahead of others are normal under the event clock: a send logged at T+9d
   * must not evict the sends at T and T+1h that a later send at T+2h still counts. Produced at
   * T+3d, every send is within cap.max-skew.ms (7 days) of its record's timestamp.
   */
  @Test
  void aSendScheduledDaysAheadDoesNotEvictWhatAnEarlierSendStillCounts() {
    Instant produced = T0.plus(Duration.ofDays(3));
    wallNow = produced;
    start(1);
    for (Duration at :
        List.of(Duration.ZERO, Duration.ofHours(1), Duration.ofDays(9), Duration.ofHours(2))) {
      ScheduledSend s = send("at+" + at, 1, at);
      input.pipeInput(key(1), sends.encode(s), produced);
    }

    assertThat(deliveredIds()).containsExactly("at+PT0S", "at+PT1H", "at+PT216H");
    Suppression s = suppressions.decode(suppressed.readValue());
    assertThat(s.getSend().getMessageId()).isEqualTo("at+PT2H");
    assertThat(s.getCapWindow()).isEqualTo("1d");
    assertThat(s.getCapCount()).as("T, T+1h and the later T+9d").isEqualTo(3);
    // the 7-day cap (limit 3) is full too, until T has left it
    assertThat(s.getNextEligibleAt()).isEqualTo(T0.plus(Duration.ofDays(7)));
  }

  @Test
  void aSendFurtherThanTheMaxSkewBehindTheStreamTimeGoesToTheDeadLetterTopic() {
    Instant later = T0.plus(Duration.ofDays(8));
    wallNow = later;
    start(1);
    input.pipeInput(key(1), sends.encode(send("ahead", 1, Duration.ofDays(8))), later);
    // within 7 days of its own record's timestamp, but 8 days behind the partition's stream time
    input.pipeInput(key(1), sends.encode(send("behind", 1, Duration.ZERO)), T0.plusSeconds(1));

    assertThat(deliveredIds()).containsExactly("ahead");
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(1);
    assertThat(header(dead.get(0), "__streams.errors.message"))
        .startsWith(
            "scheduledAt 2026-11-02T09:00:00Z is more than cap.max-skew.ms=604800000 behind the"
                + " partition's stream time 2026-11-10T09:00:00Z");
  }

  /**
   * Under the event clock, one record stamped far ahead (a clock off by decades, a typo in a year)
   * must not move the partition's stream time: if it did, every later send would lie more than
   * cap.max-skew.ms behind it and go to the dead-letter topic. A send stamped or scheduled more
   * than cap.max-skew.ms ahead of this instance's wall clock goes there itself, and the sends after
   * it are decided.
   */
  @Test
  void aSendStampedFarAheadGoesToTheDeadLetterTopicAndTheSendsAfterItAreDecided() {
    start(1);
    Instant year2100 = Instant.parse("2100-01-01T00:00:00Z");
    ScheduledSend far = send("far", 1, Duration.between(T0, year2100));
    input.pipeInput(key(1), sends.encode(far), year2100);
    pipe(send("a", 2, Duration.ZERO));
    pipe(send("b", 3, Duration.ofMinutes(1)));

    assertThat(deliveredIds()).containsExactly("a", "b");
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(1);
    assertThat(header(dead.get(0), "__streams.errors.message"))
        .startsWith(
            "the record's timestamp 2100-01-01T00:00:00Z is more than cap.max-skew.ms=604800000"
                + " ahead of this instance's clock 2026-11-02T09:00:00Z");
  }

  /**
   * The bound is the wall clock plus cap.max-skew.ms, in both directions of the check: a send
   * scheduled just within it is decided, and so is a send that lies within cap.max-skew.ms behind
   * it.
   */
  @Test
  void aSendWithinTheMaxSkewAheadOfTheClockIsDecided() {
    start(1);
    Instant edge = T0.plus(Duration.ofDays(7));
    input.pipeInput(key(1), sends.encode(send("edge", 1, Duration.ofDays(7))), edge);
    input.pipeInput(key(2), sends.encode(send("now", 2, Duration.ZERO)), T0);

    assertThat(deliveredIds()).containsExactly("edge", "now");
    assertThat(dlq.isEmpty()).isTrue();
  }

  /**
   * A send larger than cap.max-send-bytes (3 MB produced compressed passes the broker, and its
   * delivery, which embeds it, could not be written) goes to the dead-letter topic before it is
   * decided: without its body, with the reason, its key and where it was read. It consumes no cap,
   * and the sends after it are decided.
   */
  @Test
  void aSendLargerThanTheMaxSendSizeGoesToTheDeadLetterTopicWithoutItsBodyBeforeItIsDecided() {
    Properties extra = new Properties();
    extra.setProperty("cap.max-send-bytes", "10000");
    start(1, extra, () -> model, Backpressure.NONE);
    pipe(send("a", 1, Duration.ZERO));
    ScheduledSend big = send("big", 1, Duration.ofMinutes(1));
    big.setAttributes(Map.of("body", "x".repeat(20_000)));
    pipe(big);
    pipe(send("b", 1, Duration.ofMinutes(2)));

    assertThat(deliveredIds()).as("2 a day: the big send took none").containsExactly("a", "b");
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(1);
    TestRecord<byte[], byte[]> letter = dead.get(0);
    assertThat(letter.value()).isNull();
    assertThat(letter.key()).isEqualTo(key(1));
    assertThat(header(letter, "__streams.errors.message"))
        .matches(
            "the send is 200\\d\\d bytes \\(value 200\\d\\d, headers 0\\), more than"
                + " cap.max-send-bytes=10000: .*");
    assertThat(header(letter, "__streams.errors.topic")).isEqualTo("campaign-sends");
    assertThat(header(letter, "__streams.errors.partition")).isEqualTo("0");
    assertThat(header(letter, "__streams.errors.offset")).isEqualTo("1");
    assertThat(header(letter, "sendcap.errors.dropped")).startsWith("value 200");
  }

  @Test
  void aSendWithAKeyLongerThanOutputsMayCarryGoesToTheDeadLetterTopic() {
    start(1);
    input.pipeInput(new byte[5000], sends.encode(send("long-key", 1, Duration.ZERO)), T0);
    pipe(send("a", 1, Duration.ofMinutes(1)));

    assertThat(deliveredIds()).containsExactly("a");
    TestRecord<byte[], byte[]> letter = dlq.readRecord();
    assertThat(header(letter, "__streams.errors.message"))
        .isEqualTo(
            "the record's key is 5000 bytes, more than the 4096 a send's key may have (its outputs"
                + " carry it)");
  }

  /** A replay is delivered again, as DESIGN.md says, even when its global window is full. */
  @Test
  void aReplayOfAnAllowedSendIsDeliveredAgainWhenItsGlobalWindowIsFull() {
    start(5);
    pipeABatchThatRunsTheBudgetOut(); // a and c allowed; the budget of 3 is spent on a, c, d
    assertThat(deliveredIds()).containsExactly("a", "c", "d");
    suppressed.readValuesToList();

    pipe(send("c", 1, Duration.ofMinutes(2))); // the campaign engine produces c again
    pipe(send("g", 5, Duration.ofMinutes(6)));
    driver.advanceWallClockTime(Duration.ofSeconds(1));

    assertThat(deliveredIds()).containsExactly("c");
    assertThat(suppressed.readValuesToList().stream().map(suppressions::decode))
        .extracting(x -> x.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(tuple("g", SuppressionReason.GLOBAL_CAP));
    assertThat(quotaCounters.total()).as("tokens counted in the window").isEqualTo(3);
  }

  /**
   * A send and its replay in one batch, both refused for want of a token, until a send capped per
   * user gives one back: the send has it on its second chance, and its replay, decided after it, is
   * delivered again.
   */
  @Test
  void aReplayOfASendAllowedOnItsSecondChanceIsDeliveredToo() {
    start(3);
    publish(
        """
        segments:
          - name: new-users
            caps:
              - {window: 1d, limit: 1}
        default:
          caps:
            - {window: 1d, limit: 2}
        global:
          - {name: email-budget, window: 1d, limit: 2}
        """);
    pipe(send("p", NEW_USER, Duration.ZERO));
    driver.advanceWallClockTime(Duration.ofSeconds(2));
    pipe(send("q", NEW_USER, Duration.ofMinutes(1))); // the last token; capped per user
    pipe(send("r", 1, Duration.ofMinutes(2)));
    pipe(send("r", 1, Duration.ofMinutes(2))); // the campaign engine produced it twice

    assertThat(deliveredIds()).containsExactly("p", "r", "r");
    assertThat(suppressed.readValuesToList().stream().map(suppressions::decode))
        .extracting(x -> x.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(tuple("q", SuppressionReason.CAP));
    assertThat(quotaCounters.total()).as("tokens counted in the window").isEqualTo(2);
  }

  /**
   * A per-user call that Redis ran but whose answer never came (a timeout) in block mode: the batch
   * is decided again, and its sends are replays then. Their first tokens must stay counted, or the
   * budget of 3 would let a fourth send through.
   */
  @Test
  void aBatchRedisLoggedButDidNotAnswerKeepsItsTokensCountedWhenDecidedAgain() {
    AtomicInteger calls = new AtomicInteger();
    CapStore answerLost =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            Pending decided = model.submit(requests); // Redis runs the call and logs the sends
            if (calls.incrementAndGet() == 1) {
              return () -> {
                throw new LimiterUnavailableException("EVALSHA timed out", null);
              };
            }
            return decided;
          }

          @Override
          public void close() {}
        };
    start(3, new Properties(), () -> answerLost, Backpressure.NONE);
    publish(
        """
        default:
          caps:
            - {window: 1d, limit: 5}
        global:
          - {name: email-budget, window: 1d, limit: 3}
        """);
    pipe(send("a", 1, Duration.ZERO));
    pipe(send("b", 2, Duration.ZERO));
    pipe(send("c", 3, Duration.ZERO)); // the batch whose answer is lost; decided again
    pipe(send("d", 4, Duration.ZERO));
    pipe(send("e", 5, Duration.ZERO));
    driver.advanceWallClockTime(Duration.ofSeconds(2));

    assertThat(deliveredIds()).containsExactly("a", "b", "c");
    assertThat(suppressed.readValuesToList().stream().map(suppressions::decode))
        .extracting(x -> x.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(
            tuple("d", SuppressionReason.GLOBAL_CAP), tuple("e", SuppressionReason.GLOBAL_CAP));
  }

  /**
   * The second chance's call may have reached Redis and logged d before it failed: d's token stays
   * counted, or a replay of d, delivered as allowed, would hold none and the budget could be
   * exceeded.
   */
  @Test
  void aSecondChanceTheLimiterCannotDecideKeepsItsRefusalAndItsTokenStaysCounted() {
    AtomicInteger calls = new AtomicInteger();
    CapStore secondCallFails =
        new CapStore() {
          @Override
          public Pending submit(List<CapRequest> requests) {
            if (calls.incrementAndGet() == 2) {
              throw new LimiterUnavailableException("connection reset", null);
            }
            return model.submit(requests);
          }

          @Override
          public void close() {}
        };
    start(5, new Properties(), () -> secondCallFails, Backpressure.NONE);
    pipeABatchThatRunsTheBudgetOut(); // d's second chance fails
    assertThat(deliveredIds()).containsExactly("a", "c");

    pipe(send("f", 4, Duration.ofMinutes(5))); // the token b gave back went to d
    driver.advanceWallClockTime(Duration.ofSeconds(1));
    assertThat(deliveredIds()).isEmpty();
    assertThat(suppressed.readValuesToList().stream().map(suppressions::decode))
        .extracting(s -> s.getSend().getMessageId(), Suppression::getReason)
        .containsExactly(
            tuple("b", SuppressionReason.CAP),
            tuple("d", SuppressionReason.GLOBAL_CAP),
            tuple("e", SuppressionReason.GLOBAL_CAP),
            tuple("f", SuppressionReason.GLOBAL_CAP));
    assertThat(quotaCounters.total()).as("tokens counted in the window").isEqualTo(3);
  }

  /**
   * A global budget of 3 and a batch of 5 sends: a, b and c take the 3 tokens, d and e are refused
   * for want of one, and b, capped per user, gives its token back.
   */
  private void pipeABatchThatRunsTheBudgetOut() {
    publish(
        """
        segments:
          - name: new-users
            caps:
              - {window: 1d, limit: 1}
        default:
          caps:
            - {window: 1d, limit: 2}
        global:
          - {name: email-budget, window: 1d, limit: 3}
        """);
    pipe(send("a", NEW_USER, Duration.ZERO));
    pipe(send("b", NEW_USER, Duration.ofMinutes(1)));
    pipe(send("c", 1, Duration.ofMinutes(2)));
    pipe(send("d", 2, Duration.ofMinutes(3)));
    pipe(send("e", 3, Duration.ofMinutes(4)));
  }

  private void publish(String yaml) {
    publishedPolicies.pipeInput(PolicyRecords.KEY, yaml.getBytes(StandardCharsets.UTF_8));
  }

  private static String header(TestRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
