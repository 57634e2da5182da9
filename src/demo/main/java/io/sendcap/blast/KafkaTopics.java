package io.sendcap.blast;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/** Creates sendcap's topics on a broker, for {@code demo}, {@code embedded} and the benches. */
public final class KafkaTopics {
  private KafkaTopics() {}

  /** Creates the topics that do not exist yet, each with {@code partitions} partitions. */
  public static void create(String bootstrapServers, int partitions, List<String> names) {
    Map<String, Object> conf = Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    try (Admin admin = Admin.create(conf)) {
      List<NewTopic> topics =
          names.stream()
              .map(n -> new NewTopic(n, Optional.of(partitions), Optional.empty()))
              .toList();
      admin.createTopics(topics).values().values().forEach(KafkaTopics::awaitCreated);
    }
  }

  private static void awaitCreated(org.apache.kafka.common.KafkaFuture<Void> future) {
    try {
      future.get(60, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new IllegalStateException("cannot create topic: " + e.getCause().getMessage(), e);
      }
    } catch (TimeoutException e) {
      throw new IllegalStateException("topic creation did not finish in 60 s", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while creating topics", e);
    }
  }
}
