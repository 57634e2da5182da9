package io.sendcap.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.common.GroupState;

/**
 * How a Kafka Streams application's input partitions are split over its instances, read from the
 * application's consumer group (one member per stream thread).
 */
final class InputSplit {
  private static final Duration POLL_INTERVAL = Duration.ofMillis(100);

  private InputSplit() {}

  /**
   * Waits until the group {@code applicationId} is stable with {@code members} members and every
   * one of the {@code partitions} partitions of {@code input} assigned, and returns how many of
   * them each member holds, largest first.
   *
   * @throws IllegalStateException if that does not happen within {@code timeout}
   */
  static List<Integer> await(
      String bootstrapServers,
      String applicationId,
      String input,
      int partitions,
      int members,
      Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "not described yet";
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
      while (System.nanoTime() < deadline) {
        ConsumerGroupDescription group = describe(admin, applicationId);
        List<Integer> split = split(group, input);
        if (group.groupState() == GroupState.STABLE
            && split.size() == members
            && split.stream().mapToInt(Integer::intValue).sum() == partitions) {
          return split;
        }
        last = group.groupState() + ", " + input + " partitions per member " + split;
        Thread.sleep(POLL_INTERVAL.toMillis());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while describing group " + applicationId, e);
    }
    throw new IllegalStateException(
        "group "
            + applicationId
            + " did not settle on "
            + members
            + " members holding all "
            + partitions
            + " partitions of "
            + input
            + " within "
            + timeout.toSeconds()
            + " s; last seen: "
            + last);
  }

  private static List<Integer> split(ConsumerGroupDescription group, String input) {
    List<Integer> split = new ArrayList<>();
    for (MemberDescription member : group.members()) {
      split.add(
          (int)
              member.assignment().topicPartitions().stream()
                  .filter(p -> p.topic().equals(input))
                  .count());
    }
    split.sort(Comparator.reverseOrder());
    return split;
  }

  private static ConsumerGroupDescription describe(Admin admin, String groupId)
      throws InterruptedException {
    try {
      return admin
          .describeConsumerGroups(List.of(groupId))
          .describedGroups()
          .get(groupId)
          .get(10, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      throw new IllegalStateException("cannot describe group " + groupId + ": " + e, e);
    }
  }
}
