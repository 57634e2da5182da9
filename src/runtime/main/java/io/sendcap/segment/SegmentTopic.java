package io.sendcap.segment;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Utils;

/**
 * Publishes segments to the compacted {@code segments} topic and reads them back, for the
 * command-line tools (the application reads the topic through its global store).
 */
public final class SegmentTopic {
  /** Chunk size by default: half the broker's default message size limit of 1 MiB. */
  public static final int DEFAULT_CHUNK_BYTES = 512 * 1024;

  /** How long an operation waits for the brokers by default. */
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);

  /**
   * The most bytes of a segment the tools assemble: what one array holds. A version is assembled
   * only from chunks read, whose lengths must add up to its manifest's, so no claimed size is
   * allocated unread.
   */
  private static final long MAX_BYTES = Integer.MAX_VALUE - 8;

  private final Properties client;
  private final String topic;
  private final Duration timeout;

  /**
   * @param client Kafka client properties (at least {@code bootstrap.servers})
   * @param topic the segments topic
   */
  public SegmentTopic(Properties client, String topic) {
    this(client, topic, DEFAULT_TIMEOUT);
  }

  /**
   * @param client Kafka client properties (at least {@code bootstrap.servers})
   * @param topic the segments topic
   * @param timeout how long an operation waits for the brokers
   */
  public SegmentTopic(Properties client, String topic, Duration timeout) {
    this.client = client;
    this.topic = topic;
    this.timeout = timeout;
  }

  /**
   * What the topic holds: the segments at their newest complete version (none if the read did not
   * assemble them), every chunk key, and the newest manifest version of each segment.
   */
  public record Contents(
      SegmentRegistry registry, Set<String> chunkKeys, Map<String, Long> manifestVersions) {
    /** The highest version of {@code segment} in the topic, complete or not; 0 if none. */
    public long highestVersion(String segment) {
      long highest = manifestVersions.getOrDefault(segment, 0L);
      for (String key : chunkKeys) {
        SegmentRecords.ChunkKey chunk = SegmentRecords.ChunkKey.parse(key);
        if (chunk.segment().equals(segment)) {
          highest = Math.max(highest, chunk.version());
        }
      }
      return highest;
    }
  }

  /** Creates the topic, compacted, if it does not exist. */
  public void ensureExists() {
    try (Admin admin = Admin.create(client)) {
      if (admin
          .listTopics()
          .names()
          .get(timeout.toMillis(), TimeUnit.MILLISECONDS)
          .contains(topic)) {
        return;
      }
      NewTopic t =
          new NewTopic(topic, java.util.Optional.of(1), java.util.Optional.empty())
              .configs(
                  Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
      admin.createTopics(List.of(t)).all().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw new SegmentTopicException("cannot create topic " + topic + ": " + e.getCause(), e);
      }
    } catch (TimeoutException e) {
      throw unreachable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SegmentTopicException("interrupted", e);
    }
  }

  /**
   * Reads the whole topic, as an application instance would at start-up.
   *
   * @param priorityOrder the segments lookups check, first one first
   */
  public Contents read(List<String> priorityOrder) {
    return read(priorityOrder, false, true);
  }

  /** The newest complete version of each segment on the topic, by name, without reading bitmaps. */
  public Map<String, Long> publishedVersions() {
    return read(List.of(), false, false).manifestVersions();
  }

  /**
   * Reads the topic; with {@code assemble} false, only its keys and manifests, which is all a
   * publisher needs to pick the next version and the chunks to delete.
   */
  private Contents read(List<String> priorityOrder, boolean awaitTopic, boolean assemble) {
    SegmentRegistry registry = new SegmentRegistry(priorityOrder);
    SegmentLoader loader = new SegmentLoader(registry, MAX_BYTES, reason -> {});
    Set<String> chunkKeys = new HashSet<>();
    Map<String, Long> manifestVersions = new HashMap<>();
    SegmentLoader.ChunkStore chunks = SegmentLoader.ChunkStore.of(new HashMap<>());
    Properties props = new Properties();
    props.putAll(client);
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout.toMillis());
    try (KafkaConsumer<String, byte[]> consumer =
        new KafkaConsumer<>(props, new StringDeserializer(), new ByteArrayDeserializer())) {
      List<PartitionInfo> infos = consumer.partitionsFor(topic, timeout);
      // A topic created a moment ago may not be in this client's metadata yet.
      for (int i = 0; i < 50 && awaitTopic && infos.isEmpty(); i++) {
        Thread.sleep(100);
        infos = consumer.partitionsFor(topic, timeout);
      }
      List<TopicPartition> partitions = partitions(infos);
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions, timeout);
      while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
        for (ConsumerRecord<String, byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          if (r.key() == null) {
            continue;
          }
          if (SegmentRecords.isManifestKey(r.key())) {
            noteManifest(r.key(), r.value(), manifestVersions);
          } else if (isChunkKey(r.key()) && r.value() != null) {
            chunkKeys.add(r.key());
          } else {
            chunkKeys.remove(r.key());
          }
          if (assemble) {
            loader.onRecord(r.key(), r.value(), chunks);
          }
        }
      }
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
      throw unreachable(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SegmentTopicException("interrupted while reading " + topic, e);
    }
    return new Contents(registry, chunkKeys, manifestVersions);
  }

  private static void noteManifest(String key, byte[] value, Map<String, Long> versions) {
    if (value == null) {
      return;
    }
    try {
      versions.merge(key, SegmentRecords.Manifest.fromJson(value).check(key).version(), Math::max);
    } catch (IllegalArgumentException e) {
      // not a manifest; the loader reports it when the topic is read to be used
    }
  }

  private static boolean isChunkKey(String key) {
    try {
      SegmentRecords.ChunkKey.parse(key);
      return true;
    } catch (IllegalArgumentException e) {
      return false; // the loader reports it when the topic is read to be used
    }
  }

  /**
   * Publishes {@code ids} as the next version of {@code segment}: chunks, then the manifest, then
   * tombstones for the chunks of every other version. Returns the manifest written.
   */
  public SegmentRecords.Manifest publish(
      String segment, UserIds ids, int chunkBytes, PrintStream progress) {
    SegmentRecords.requireName(segment);
    ensureExists();
    Contents contents = read(List.of(), true, false);
    long version = contents.highestVersion(segment) + 1;
    List<SegmentRecords.Entry> entries =
        SegmentRecords.publish(segment, version, ids, chunkBytes, System.currentTimeMillis());
    SegmentRecords.Manifest manifest =
        SegmentRecords.Manifest.fromJson(entries.get(entries.size() - 1).value());
    Properties props = new Properties();
    props.putAll(client);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, (int) timeout.toMillis());
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(props, new StringSerializer(), new ByteArraySerializer())) {
      int partitions = producer.partitionsFor(topic).size();
      int partition =
          Utils.toPositive(Utils.murmur2(SegmentRecords.keyBytes(segment))) % partitions;
      progress.printf(
          "publishing %s v%d: %,d users, %,d bytes in %d chunks to %s%n",
          segment, version, manifest.cardinality(), manifest.bytes(), manifest.chunks(), topic);
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (int i = 0; i < entries.size() - 1; i++) {
        SegmentRecords.Entry e = entries.get(i);
        sent.add(producer.send(new ProducerRecord<>(topic, partition, e.key(), e.value())));
      }
      awaitAll(sent, progress);
      SegmentRecords.Entry last = entries.get(entries.size() - 1);
      producer.send(new ProducerRecord<>(topic, partition, last.key(), last.value())).get();
      List<Future<RecordMetadata>> tombstones = new ArrayList<>();
      for (String key : contents.chunkKeys()) {
        if (SegmentRecords.ChunkKey.parse(key).segment().equals(segment)) {
          tombstones.add(producer.send(new ProducerRecord<>(topic, partition, key, null)));
        }
      }
      for (Future<RecordMetadata> f : tombstones) {
        f.get();
      }
      progress.printf(
          "published %s v%d; %d chunks of earlier versions deleted%n",
          segment, version, tombstones.size());
      return manifest;
    } catch (ExecutionException e) {
      throw new SegmentTopicException("publishing to " + topic + " failed: " + e.getCause(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new SegmentTopicException("interrupted while publishing", e);
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
      throw unreachable(e);
    }
  }

  private static void awaitAll(List<Future<RecordMetadata>> sent, PrintStream progress)
      throws ExecutionException, InterruptedException {
    int step = Math.max(1, sent.size() / 10);
    for (int i = 0; i < sent.size(); i++) {
      sent.get(i).get();
      if ((i + 1) % step == 0 || i + 1 == sent.size()) {
        progress.printf("  %d/%d chunks written%n", i + 1, sent.size());
      }
    }
  }

  private List<TopicPartition> partitions(List<PartitionInfo> infos) {
    if (infos == null || infos.isEmpty()) {
      throw new SegmentTopicException(
          "topic " + topic + " does not exist; publish a segment first (segments publish)", null);
    }
    return infos.stream().map(p -> new TopicPartition(p.topic(), p.partition())).toList();
  }

  private SegmentTopicException unreachable(Exception e) {
    return new SegmentTopicException(
        "cannot reach Kafka at "
            + client.get("bootstrap.servers")
            + " within "
            + timeout.toSeconds()
            + " s (bootstrap.servers)",
        e);
  }

  /** The segments topic could not be used; the message says why. */
  public static final class SegmentTopicException extends RuntimeException {
    SegmentTopicException(String message, Throwable cause) {
      super(message, cause);
    }
  }
}
