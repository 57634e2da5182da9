package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.LivePolicies;
import io.sendcap.config.Policies;
import io.sendcap.config.PolicyRecords;
import io.sendcap.config.SendcapConfig;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.QuotaCounters;
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
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TestOutputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Records on the {@code segments} and {@code policies} topics that cannot be applied: each is
 * skipped and counted with its reason, the version in force stays, and every send is still decided.
 */
class GlobalRecordsTest {
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
      """;

  private final SingleObjectAvroSerde<ScheduledSend> sends =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private final SingleObjectAvroSerde<Suppression> suppressions =
      new SingleObjectAvroSerde<>(Suppression.class);
  private final SimpleMeterRegistry metrics = new SimpleMeterRegistry();
  private LivePolicies policies;
  private SegmentRegistry registry;
  private TopologyTestDriver driver;
  private TestInputTopic<String, byte[]> segments;
  private TestInputTopic<String, byte[]> publishedPolicies;
  private TestInputTopic<byte[], byte[]> input;
  private TestOutputTopic<byte[], byte[]> delivered;
  private TestOutputTopic<byte[], byte[]> suppressed;

  @BeforeEach
  void start() {
    Properties props = new Properties();
    props.setProperty("bootstrap.servers", "unused:9092");
    props.setProperty("cap.clock", "event");
    props.setProperty("processing.guarantee", "at_least_once");
    props.setProperty("batch.max.records", "1");
    props.setProperty("segments.max-bytes", "4096");
    SendcapConfig config = SendcapConfig.from(props, "test");
    policies = new LivePolicies(Policies.parse(POLICIES, "test"), "test");
    registry = new SegmentRegistry(policies.current().policies().segmentNames());
    policies.onChange(p -> registry.prioritize(p.segmentNames()));
    driver =
        new TopologyTestDriver(
            SendcapTopology.build(
                config,
                policies,
                registry,
                () -> new SlidingLogModel(Duration.ZERO),
                new GlobalQuotas(
                    new QuotaCounters(),
                    "s",
                    InstantSource.fixed(T0),
                    Duration.ofSeconds(5),
                    metrics),
                InstantSource.fixed(T0),
                Backpressure.NONE,
                RegistryOutage.NONE,
                new Undecided(metrics),
                metrics),
            SendcapTopology.streamsProperties(config));
    segments =
        driver.createInputTopic("segments", new StringSerializer(), new ByteArraySerializer());
    publishedPolicies =
        driver.createInputTopic("policies", new StringSerializer(), new ByteArraySerializer());
    ByteArraySerializer ser = new ByteArraySerializer();
    ByteArrayDeserializer de = new ByteArrayDeserializer();
    input = driver.createInputTopic("campaign-sends", ser, ser);
    delivered = driver.createOutputTopic("deliveries", de, de);
    suppressed = driver.createOutputTopic("suppressed", de, de);
    UserIds newUsers = new UserIds();
    newUsers.add(NEW_USER);
    publishSegment("new-users", 1, newUsers);
  }

  @AfterEach
  void close() {
    driver.close();
  }

  private void publishSegment(String name, long version, UserIds ids) {
    for (SegmentRecords.Entry e : SegmentRecords.publish(name, version, ids, 1024, 0)) {
      segments.pipeInput(e.key(), e.value());
    }
  }

  private void segmentRecord(String key, String value) {
    segments.pipeInput(key, value == null ? null : value.getBytes(StandardCharsets.UTF_8));
  }

  private double rejected(String topic, String reason) {
    Counter c = metrics.find("sendcap." + topic + ".rejected").tag("reason", reason).counter();
    return c == null ? 0 : c.count();
  }

  /** Two sends to the new user a minute apart: the segment's cap of 1 a day allows the first. */
  private void assertNewUsersCapStillDecides(String prefix) {
    for (int i = 0; i < 2; i++) {
      ScheduledSend s =
          ScheduledSend.newBuilder()
              .setMessageId(prefix + i)
              .setCampaignId("c1")
              .setUserId(NEW_USER)
              .setChannel(Channel.EMAIL)
              .setScheduledAt(T0.plus(Duration.ofMinutes(i)))
              .build();
      input.pipeInput(
          new TestRecord<>(
              String.valueOf(NEW_USER).getBytes(StandardCharsets.UTF_8),
              sends.encode(s),
              new RecordHeaders(),
              T0));
    }
    driver.advanceWallClockTime(Duration.ofMillis(500));
    assertThat(delivered.readValuesToList()).hasSize(1);
    List<byte[]> capped = suppressed.readValuesToList();
    assertThat(capped).hasSize(1);
    assertThat(suppressions.decode(capped.get(0)).getCapLimit()).isEqualTo(1);
  }

  @Test
  void aManifestWithoutItsSegmentNameIsSkippedAndCounted() {
    segmentRecord("evil", "{\"version\":1}");

    assertThat(rejected("segments", "invalid")).isEqualTo(1);
    assertThat(registry.version("new-users")).isEqualTo(1);
    assertNewUsersCapStillDecides("a");
  }

  @Test
  void manifestsThatClaimImpossibleSizesAreSkippedBeforeAnythingIsAllocated() {
    String sha = "0".repeat(64);
    segmentRecord(
        "new-users",
        "{\"segment\":\"new-users\",\"version\":2,\"chunks\":-1,\"bytes\":10,\"sha256\":\""
            + sha
            + "\",\"cardinality\":1,\"publishedAt\":0}");
    segmentRecord(
        "new-users",
        "{\"segment\":\"new-users\",\"version\":2,\"chunks\":1,\"bytes\":-5,\"sha256\":\""
            + sha
            + "\",\"cardinality\":1,\"publishedAt\":0}");
    segmentRecord(
        "new-users",
        "{\"segment\":\"new-users\",\"version\":2,\"chunks\":3,\"bytes\":2,\"sha256\":\""
            + sha
            + "\",\"cardinality\":1,\"publishedAt\":0}");
    segmentRecord(
        "new-users",
        "{\"segment\":\"new-users\",\"version\":2,\"chunks\":1,\"bytes\":2147483648,\"sha256\":\""
            + sha
            + "\",\"cardinality\":1,\"publishedAt\":0}");
    segmentRecord(
        "other",
        "{\"segment\":\"new-users\",\"version\":2,\"chunks\":1,\"bytes\":2,\"sha256\":\""
            + sha
            + "\",\"cardinality\":1,\"publishedAt\":0}");
    segmentRecord("new-users", "not json");

    assertThat(rejected("segments", "invalid")).isEqualTo(4);
    assertThat(rejected("segments", "too-large")).isEqualTo(1);
    assertThat(rejected("segments", "malformed")).isEqualTo(1);
    assertThat(registry.version("new-users")).isEqualTo(1);
    assertNewUsersCapStillDecides("b");
  }

  @Test
  void chunksWithMalformedKeysOrBeyondTheBoundAreSkipped() {
    segmentRecord("new-users/x/0", "abc");
    segmentRecord("new-users/2/-1", "abc");
    segmentRecord("/2/0", "abc");
    segmentRecord("new-users/2/0/extra", "abc");
    segmentRecord("new-users/3/0", "x".repeat(5000));

    assertThat(rejected("segments", "malformed")).isEqualTo(4);
    assertThat(rejected("segments", "too-large")).isEqualTo(1);
    assertNewUsersCapStillDecides("c");
  }

  @Test
  void aNewerValidVersionIsStillInstalledAfterTheRejectedRecords() {
    segmentRecord("evil", "{\"version\":1}");
    segmentRecord("new-users/x/0", "abc");
    UserIds v2 = new UserIds();
    v2.add(NEW_USER);
    v2.add(8);
    publishSegment("new-users", 2, v2);

    assertThat(registry.version("new-users")).isEqualTo(2);
    assertThat(registry.segmentOf(8)).isEqualTo("new-users");
  }

  @Test
  void aPoliciesRecordWithANullSourceHeaderIsStillRead() {
    RecordHeaders headers = new RecordHeaders();
    headers.add(PolicyRecords.SOURCE_HEADER, null);
    publishedPolicies.pipeInput(
        new TestRecord<>(
            PolicyRecords.KEY,
            POLICIES.replace("limit: 1}", "limit: 3}").getBytes(StandardCharsets.UTF_8),
            headers,
            T0));

    assertThat(policies.current().version()).isEqualTo(1);
  }

  @Test
  void policiesThatParseButAreNoPolicyAreSkippedAndCounted() {
    List<String> notPolicies =
        List.of(
            "[]",
            "hello",
            "segments: {a: 1}\ndefault: {caps: [{window: 1d, limit: 1}]}",
            "segments: [5]\ndefault: {caps: [{window: 1d, limit: 1}]}",
            "segments: [[1]]\ndefault: {caps: [{window: 1d, limit: 1}]}",
            "default: 5",
            "default: {caps: 7}",
            "default: {caps: [5]}",
            "default: {caps: [[]]}",
            "default: {caps: [{window: [], limit: {}}]}",
            "default: {caps: [{window: 1d, limit: 1}], min-interval: []}",
            "default: {caps: [{window: 1d, limit: 1}], zone: {a: b}}",
            "default: {caps: [{window: 1d, limit: 1}]}\nglobal: [[]]",
            "default: {caps: [{window: 1d, limit: 1}]}\nglobal: [5]",
            "default: {caps: [{window: 1d, limit: 1}]}\nglobal: {a: 1}",
            "default: {caps: [{window: 1d, limit: 1, channel: []}]}",
            "default: {caps: [{window: 99999999999d, limit: 1}]}",
            "default: {caps: [{window: 1d, limit: 99999999999999999999}]}");
    for (String yaml : notPolicies) {
      publishedPolicies.pipeInput(PolicyRecords.KEY, yaml.getBytes(StandardCharsets.UTF_8));
    }

    assertThat(policies.current().version()).isZero();
    assertThat(rejected("policies", "invalid")).isEqualTo(notPolicies.size());
    assertNewUsersCapStillDecides("d");
  }

  @Test
  void policiesRecordsOfAnotherKeyOrWithoutAValueAreCounted() {
    publishedPolicies.pipeInput("other", POLICIES.getBytes(StandardCharsets.UTF_8));
    publishedPolicies.pipeInput(PolicyRecords.KEY, (byte[]) null);

    assertThat(rejected("policies", "key")).isEqualTo(1);
    assertThat(rejected("policies", "no-value")).isEqualTo(1);
    assertThat(policies.current().version()).isZero();
  }
}
