package io.sendcap.topology;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.avro.Suppression;
import io.sendcap.config.Policies;
import io.sendcap.segment.SegmentRecords;
import io.sendcap.segment.UserIds;
import io.sendcap.serde.SingleObjectAvroSerde;
import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;

/**
 * The outputs of one run of a {@link Scenario} through the topology: by input position, every
 * output that names it; the sends delivered, by position; the outputs whose message id is not that
 * of the input at their position; and the policies it ran under.
 *
 * <p>{@link #pipe} makes one: it feeds the scenario to a {@code TopologyTestDriver} and reads the
 * output topics.
 */
record Run(
    Policies policies,
    Map<Integer, List<Seen>> outputs,
    Map<Integer, ScheduledSend> delivered,
    List<String> misfits) {

  private static final SingleObjectAvroSerde<ScheduledSend> SENDS =
      new SingleObjectAvroSerde<>(ScheduledSend.class);
  private static final SingleObjectAvroSerde<Delivery> DELIVERIES =
      new SingleObjectAvroSerde<>(Delivery.class);
  private static final SingleObjectAvroSerde<Suppression> SUPPRESSIONS =
      new SingleObjectAvroSerde<>(Suppression.class);

  /** The one output of position {@code pos}, or null if it has none or several. */
  Seen seen(int pos) {
    List<Seen> all = outputs.getOrDefault(pos, List.of());
    return all.size() == 1 ? all.get(0) : null;
  }

  /**
   * Pipes the scenario into {@code driver}, which runs the topology under {@code policies}: the
   * segment's members first if the policies have a segment, then the sends, each followed by its
   * wall-clock tick; then lets every batch be decided and collects what comes out.
   */
  static Run pipe(Scenario s, Policies policies, TopologyTestDriver driver, Undecided undecided) {
    if (!policies.segmentNames().isEmpty()) {
      publishSegment(s, driver);
    }
    ByteArraySerializer ser = new ByteArraySerializer();
    TestInputTopic<byte[], byte[]> input = driver.createInputTopic("campaign-sends", ser, ser);
    for (Input in : s.inputs()) {
      input.pipeInput(
          Long.toString(in.userId()).getBytes(StandardCharsets.UTF_8),
          SENDS.encode(send(in, s.user(in.userId()))),
          Instant.ofEpochMilli(in.recordTs()));
      if (in.tickMs() > 0) {
        driver.advanceWallClockTime(Duration.ofMillis(in.tickMs()));
      }
    }
    // A partial batch is flushed once it has waited batch.max.wait.ms, and forwarded at a tick
    // once its answer is in. The driver's clock is not Redis's: a tick may come before the answer,
    // so the sends still in flight then are drained, as before a clean shutdown, which waits.
    driver.advanceWallClockTime(Duration.ofMillis(1100));
    if (undecided.count() > 0) {
      undecided.startDraining();
      driver.advanceWallClockTime(Duration.ofMillis(1100));
    }
    return collect(s, policies, driver);
  }

  private static void publishSegment(Scenario s, TopologyTestDriver driver) {
    UserIds members = new UserIds();
    s.users().stream().filter(User::inSegment).forEach(u -> members.add(u.id()));
    TestInputTopic<String, byte[]> segments =
        driver.createInputTopic("segments", new StringSerializer(), new ByteArraySerializer());
    for (SegmentRecords.Entry e :
        SegmentRecords.publish(CapPathInputs.SEGMENT, 1, members, 1024, 0)) {
      segments.pipeInput(e.key(), e.value());
    }
  }

  /** Reads the deliveries, the suppressions and the dead letters of the run. */
  private static Run collect(Scenario s, Policies policies, TopologyTestDriver driver) {
    Run run = new Run(policies, new TreeMap<>(), new HashMap<>(), new ArrayList<>());
    ByteArrayDeserializer de = new ByteArrayDeserializer();
    for (byte[] b : driver.createOutputTopic("deliveries", de, de).readValuesToList()) {
      Delivery d = DELIVERIES.decode(b);
      run.add(s, d.getSend(), Seen.of(d));
      run.delivered().put(pos(d.getSend()), d.getSend());
    }
    for (byte[] b : driver.createOutputTopic("suppressed", de, de).readValuesToList()) {
      Suppression sup = SUPPRESSIONS.decode(b);
      run.add(s, sup.getSend(), Seen.of(sup));
    }
    for (byte[] b : driver.createOutputTopic("campaign-sends-dlq", de, de).readValuesToList()) {
      run.add(s, SENDS.decode(b), Seen.DEAD_LETTER);
    }
    return run;
  }

  /** Files {@code seen} under the position {@code send} carries, a misfit if it is not its own. */
  private void add(Scenario s, ScheduledSend send, Seen seen) {
    int pos = pos(send);
    if (pos < 0
        || pos >= s.inputs().size()
        || !s.inputs().get(pos).messageId().equals(send.getMessageId())) {
      misfits.add(send.getMessageId() + " at position " + pos + ": " + seen);
    }
    outputs.computeIfAbsent(pos, p -> new ArrayList<>()).add(seen);
  }

  private static ScheduledSend send(Input in, User user) {
    return ScheduledSend.newBuilder()
        .setMessageId(in.messageId())
        .setCampaignId(in.campaign())
        .setUserId(in.userId())
        .setChannel(in.channel())
        .setScheduledAt(Instant.ofEpochMilli(in.scheduledAt()))
        .setTransactional(in.transactional())
        .setUserTimeZone(user.zone() == null ? null : user.zone().getId())
        .setAttributes(Map.of("pos", Integer.toString(in.pos())))
        .build();
  }

  private static int pos(ScheduledSend send) {
    return Integer.parseInt(send.getAttributes().get("pos"));
  }
}
