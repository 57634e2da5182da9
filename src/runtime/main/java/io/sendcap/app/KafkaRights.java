package io.sendcap.app;

import io.sendcap.config.SendcapConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.streams.StreamsConfig;

/**
 * What {@code run} checks before it starts Kafka Streams: that its topics exist and that its
 * principal may read the input, segments and policies, write the outputs, use its consumer group
 * and its transactional ids. On a cluster with ACLs a missing right would otherwise show up as a
 * stream thread dying minutes later, or a topic that seems not to exist (the brokers hide topics a
 * principal may not describe).
 */
final class KafkaRights {
  private final SendcapConfig config;
  private final Duration timeout;

  KafkaRights(SendcapConfig config, Duration timeout) {
    this.config = config;
    this.timeout = timeout;
  }

  /** The problems found: missing topics first, then each right refused; empty if none. */
  List<String> problems() {
    SendcapConfig.Topics t = config.topics();
    Map<String, AclOperation> needs = new LinkedHashMap<>();
    needs.put(t.input(), AclOperation.READ);
    needs.put(t.segments(), AclOperation.READ);
    needs.put(t.policies(), AclOperation.READ);
    needs.put(t.deliveries(), AclOperation.WRITE);
    needs.put(t.suppressed(), AclOperation.WRITE);
    needs.put(t.deadLetters(), AclOperation.WRITE);
    Properties props = new Properties();
    props.putAll(SendcapTopics.clientProperties(config));
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    List<String> missing = new ArrayList<>();
    List<String> refused = new ArrayList<>();
    try (Admin admin = Admin.create(props)) {
      Map<String, KafkaFuture<TopicDescription>> described =
          admin
              .describeTopics(
                  needs.keySet(), new DescribeTopicsOptions().includeAuthorizedOperations(true))
              .topicNameValues();
      for (Map.Entry<String, AclOperation> need : needs.entrySet()) {
        String topic = need.getKey();
        try {
          Set<AclOperation> allowed = await(described.get(topic)).authorizedOperations();
          if (allowed != null && !allowed.contains(need.getValue())) {
            refused.add(need.getValue() + " on topic " + topic);
          }
        } catch (ExecutionException e) {
          if (e.getCause() instanceof UnknownTopicOrPartitionException) {
            missing.add(topic);
          } else if (e.getCause() instanceof TopicAuthorizationException) {
            refused.add(need.getValue() + " and DESCRIBE on topic " + topic);
          } else {
            throw failure(e);
          }
        }
      }
      String group = config.streams().getProperty(StreamsConfig.APPLICATION_ID_CONFIG);
      try {
        await(admin.listConsumerGroupOffsets(group).all());
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof GroupAuthorizationException)) {
          throw failure(e);
        }
        refused.add("READ on group " + group);
      }
      if (config
          .streams()
          .getProperty(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, "")
          .startsWith("exactly_once")) {
        String probe = group + "-" + UUID.randomUUID();
        try {
          await(admin.describeTransactions(List.of(probe)).all());
        } catch (ExecutionException e) {
          if (e.getCause() instanceof TransactionalIdAuthorizationException) {
            refused.add("WRITE and DESCRIBE on transactional ids prefixed " + group + "-");
          } else if (!(e.getCause() instanceof TransactionalIdNotFoundException)) {
            throw failure(e);
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalArgumentException("interrupted while asking Kafka for sendcap's rights", e);
    }
    List<String> problems = new ArrayList<>();
    if (!missing.isEmpty()) {
      problems.add(
          "missing topic(s) "
              + missing
              + "; create them before starting sendcap ("
              + t.segments()
              + " is created by: bin/sendcap segments publish)");
    }
    if (!refused.isEmpty()) {
      problems.add(
          "Kafka's ACLs do not allow sendcap's principal "
              + String.join(", ", refused)
              + "; "
              + KafkaErrors.ACL_HELP);
    }
    return problems;
  }

  private <T> T await(KafkaFuture<T> future) throws ExecutionException, InterruptedException {
    try {
      return future.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new ExecutionException(e);
    }
  }

  private IllegalArgumentException failure(ExecutionException e) {
    String refusal = KafkaErrors.refusal(e);
    if (refusal != null) {
      return new IllegalArgumentException(refusal, e);
    }
    return new IllegalArgumentException(
        "cannot reach Kafka at "
            + config.streams().getProperty("bootstrap.servers")
            + " within "
            + timeout.toSeconds()
            + " s (bootstrap.servers): "
            + e.getCause().getMessage(),
        e);
  }
}
