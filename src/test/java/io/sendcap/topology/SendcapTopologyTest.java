package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import io.sendcap.config.Policies;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.SlidingLogModel;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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
  private TopologyTestDriver driver;
  private TestInputTopic<byte[], byte[]> input;
  private TestOutputTopic<byte[], byte[]> delivered;
  private TestOutputTopic<byte[], byte[]> suppressed;
  private TestOutputTopic<byte[], byte[]> dlq;

  private void start(int batchRecords) {
    Properties props = new Properties();
    props.setProperty("bootstrap.servers", "unused:9092");
    props.setProperty("cap.clock", "event");
    // TopologyTestDriver drops dead-letter records under exactly_once_v2; PipelineIT checks them
    // with exactly-once on a real broker.
    props.setProperty("processing.guarantee", "at_least_once");
    props.setProperty("batch.max.records", String.valueOf(batchRecords));
    props.setProperty("batch.max.wait.ms", "1000");
    SendcapConfig config = SendcapConfig.from(props, "test");
    UserIds newUsers = new UserIds();
    newUsers.add(NEW_USER);
    Policies policies = Policies.parse(POLICIES, "test");
    driver =
        new TopologyTestDriver(
            SendcapTopology.build(
                config,
                policies,
                new SegmentRegistry(policies.segmentNames()),
                () -> model,
                InstantSource.fixed(T0)),
            SendcapTopology.streamsProperties(config));
    TestInputTopic<String, byte[]> segments =
        driver.createInputTopic("segments", new StringSerializer(), new ByteArraySerializer());
    for (SegmentRecords.Entry e : SegmentRecords.publish("new-users", 1, newUsers, 1024, 0)) {
      segments.pipeInput(e.key(), e.value());
    }
    ByteArraySerializer ser = new ByteArraySerializer();
    ByteArrayDeserializer de = new ByteArrayDeserializer();
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

  private void pipe(ScheduledSend s) {
    input.pipeInput(
        String.valueOf(s.getUserId()).getBytes(StandardCharsets.UTF_8), sends.encode(s));
  }

  /**
   * Lets the punctuator forward the batch in flight: a flushed batch's decisions are forwarded at
   * the next flush or punctuation (every half of batch.max.wait.ms).
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
    pipe(send("ok", 1, Duration.ZERO));

    settle();
    List<TestRecord<byte[], byte[]>> dead = dlq.readRecordsToList();
    assertThat(dead).hasSize(3);
    assertThat(dead.get(0).value()).isEqualTo(garbage);
    assertThat(header(dead.get(0), "__streams.errors.message"))
        .contains("not a io.sendcap.avro.ScheduledSend");
    assertThat(header(dead.get(1), "__streams.errors.message")).contains("messageId is empty");
    assertThat(header(dead.get(1), "__streams.errors.offset")).isEqualTo("1");
    assertThat(header(dead.get(2), "__streams.errors.message"))
        .isEqualTo("userTimeZone \"Mars/Olympus\" is not a time zone id");
    assertThat(deliveredIds()).containsExactly("ok");
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

  private static String header(TestRecord<byte[], byte[]> record, String name) {
    Header h = record.headers().lastHeader(name);
    return h == null ? null : new String(h.value(), StandardCharsets.UTF_8);
  }
}
