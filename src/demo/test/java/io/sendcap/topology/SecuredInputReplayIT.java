package io.sendcap.topology;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.Certificates;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.SecuredAccess;
import io.sendcap.embedded.SecuredSetup;
import io.sendcap.serde.SingleObjectAvroSerde;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A restored task reads its input again as sendcap's principal on a secured broker (SASL_SSL,
 * SCRAM-SHA-512, the StandardAuthorizer, nothing allowed without an ACL), with exactly the ACLs
 * README lists: the read and the committed offset it stops at need nothing more.
 */
class SecuredInputReplayIT {
  private static final String PASSWORD = "pw-" + Long.toHexString(System.nanoTime());
  private static final String TOPIC = "campaign-sends";
  private static final Instant T0 = Instant.parse("2026-11-02T09:00:00Z");

  @TempDir Path dir;

  @Test
  void aRestoredTaskReadsItsInputAgainWithTheReadmesAcls() throws Exception {
    Certificates certificates = Certificates.create(dir);
    try (EmbeddedKafka kafka =
            EmbeddedKafka.start(
                null, 0, new EmbeddedKafka.Security(certificates, Map.of("sendcap", PASSWORD)));
        SingleObjectAvroSerde<ScheduledSend> sends =
            new SingleObjectAvroSerde<>(ScheduledSend.class)) {
      // the harness works over the broker's plaintext listener, whose principal is a super user
      String harness = kafka.adminBootstrapServers();
      try (Admin admin =
          Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, harness))) {
        admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 1))).all().get();
        List<AclBinding> acls = new ArrayList<>();
        SecuredAccess.KAFKA_ACLS.forEach(
            line -> acls.addAll(SecuredAccess.bindings(line, "User:sendcap")));
        admin.createAcls(acls).all().get();
      }
      try (KafkaProducer<byte[], byte[]> producer =
          new KafkaProducer<>(
              Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, harness),
              new ByteArraySerializer(),
              new ByteArraySerializer())) {
        for (int i = 0; i < 5; i++) {
          ScheduledSend send =
              ScheduledSend.newBuilder()
                  .setMessageId("m" + i)
                  .setCampaignId("c1")
                  .setUserId(i)
                  .setChannel(Channel.PUSH)
                  .setScheduledAt(T0)
                  .build();
          producer.send(
              new ProducerRecord<>(TOPIC, 0, T0.toEpochMilli(), null, sends.encode(send)));
        }
      }
      TopicPartition partition = new TopicPartition(TOPIC, 0);
      try (KafkaConsumer<byte[], byte[]> group =
          new KafkaConsumer<>(
              Map.of(
                  ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                  harness,
                  ConsumerConfig.GROUP_ID_CONFIG,
                  "sendcap"),
              new ByteArrayDeserializer(),
              new ByteArrayDeserializer())) {
        group.commitSync(Map.of(partition, new OffsetAndMetadata(3)));
      }

      Properties p = SecuredSetup.scramSettings(kafka.bootstrapServers(), "sendcap", PASSWORD);
      p.setProperty("ssl.truststore.location", certificates.truststore().toString());
      p.setProperty("ssl.truststore.password", certificates.password());
      p.setProperty("application.id", "sendcap");
      List<String> handed = new ArrayList<>();
      new KafkaInputReplay(
              SendcapConfig.from(p, "test"), (topic, bytes) -> sends.decodeKeepingBody(bytes))
          .read(partition, 1, r -> handed.add(r.value().record().getMessageId()));

      assertThat(handed).containsExactly("m1", "m2");
    }
  }
}
