package io.sendcap.app;

import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KafkaStreams.State;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs Kafka Streams' state changes at INFO with what the application waits for: while it is
 * REBALANCING no send is decided, and after a restart that lasts until the group gives up on the
 * instance's previous membership, which an operator can shorten.
 */
final class StateLog implements KafkaStreams.StateListener {
  private static final Logger LOG = LoggerFactory.getLogger(StateLog.class);

  private final String group;
  private final String input;
  private final boolean staticMember;
  private KafkaStreams streams;

  /**
   * A log for the application of consumer group {@code group} reading {@code input}; {@code
   * staticMember} is whether {@code group.instance.id} is set.
   */
  StateLog(String group, String input, boolean staticMember) {
    this.group = group;
    this.input = input;
    this.staticMember = staticMember;
  }

  /** Listens to {@code streams}, before it starts. */
  void attach(KafkaStreams streams) {
    this.streams = streams;
    streams.setStateListener(this);
  }

  @Override
  public void onChange(State newState, State oldState) {
    switch (newState) {
      case REBALANCING ->
          LOG.info(
              "Kafka Streams is REBALANCING: waiting for consumer group {} to assign this instance"
                  + " its partitions of {}; no send is decided meanwhile.{}",
              group,
              input,
              staticMember
                  ? ""
                  : " After a restart the group first waits for the previous member to time out"
                      + " (session.timeout.ms, 45 s by default); group.instance.id (static"
                      + " membership) lets a restarted instance take its partitions back at"
                      + " once.");
      case RUNNING ->
          LOG.info("Kafka Streams is RUNNING: deciding the sends of {}", inputPartitions());
      case ERROR -> LOG.error("Kafka Streams is in ERROR (was {}): it stops", oldState);
      default -> LOG.info("Kafka Streams is {} (was {})", newState, oldState);
    }
  }

  /** The partitions of the input topic this instance's threads have been assigned. */
  private String inputPartitions() {
    if (streams == null) {
      return "[]";
    }
    return streams.metadataForLocalThreads().stream()
        .flatMap(thread -> thread.activeTasks().stream())
        .flatMap(task -> task.topicPartitions().stream())
        .filter(p -> p.topic().equals(input))
        .map(TopicPartition::toString)
        .collect(Collectors.toCollection(TreeSet::new))
        .toString();
  }
}
