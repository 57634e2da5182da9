package io.sendcap.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * What {@code embedded --secure} makes of its servers: a certificate, two principals (sendcap, with
 * README's least rights, and an operator with every right on the topics, for the tools), the same
 * on Redis for sendcap, and a settings file for each.
 *
 * @param certificates the servers' certificate and the clients' trust store
 * @param sendcapPassword the password of {@code sendcap} on Kafka and Redis
 * @param operatorPassword the password of {@code operator} on Kafka
 * @param dir where the certificate and the settings files are
 */
public record SecuredSetup(
    Certificates certificates, String sendcapPassword, String operatorPassword, Path dir) {
  /** sendcap's principal. */
  public static final String SENDCAP = "sendcap";

  /** The tools' principal. */
  public static final String OPERATOR = "operator";

  /** Makes the certificate and the passwords in {@code dir}. */
  public static SecuredSetup create(Path dir) {
    try {
      return new SecuredSetup(Certificates.create(dir), password(), password(), dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot make a certificate in " + dir, e);
    }
  }

  private static String password() {
    byte[] bytes = new byte[12];
    new SecureRandom().nextBytes(bytes);
    return HexFormat.of().formatHex(bytes);
  }

  /** The broker's security: the SCRAM users and the certificate. */
  public EmbeddedKafka.Security kafkaSecurity() {
    return new EmbeddedKafka.Security(
        certificates, Map.of(SENDCAP, sendcapPassword, OPERATOR, operatorPassword));
  }

  /** The {@code redis-server} options of a TLS port with this certificate. */
  public List<String> redisOptions(int tlsPort) {
    return certificates.redisTlsOptions(tlsPort);
  }

  /** Adds sendcap's Redis user with README's rule. */
  public void grant(EmbeddedRedis redis) {
    List<String> words =
        new ArrayList<>(
            List.of(SecuredAccess.REDIS_ACL.replace("PASSWORD", sendcapPassword).split(" ")));
    try {
      redis.call(words.toArray(String[]::new));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot add sendcap's user to Redis", e);
    }
  }

  /**
   * Creates the policies topic (sendcap's principal may not create it) and grants sendcap README's
   * ACLs and the operator every right on every topic.
   */
  public void grant(EmbeddedKafka kafka) {
    try (Admin admin =
        Admin.create(
            Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.adminBootstrapServers()))) {
      admin
          .createTopics(
              List.of(
                  new NewTopic("policies", 1, (short) 1)
                      .configs(
                          Map.of(
                              TopicConfig.CLEANUP_POLICY_CONFIG,
                              TopicConfig.CLEANUP_POLICY_COMPACT))))
          .all()
          .get();
      List<AclBinding> acls = new ArrayList<>();
      SecuredAccess.KAFKA_ACLS.forEach(
          line -> acls.addAll(SecuredAccess.bindings(line, "User:" + SENDCAP)));
      acls.add(
          new AclBinding(
              new ResourcePattern(ResourceType.TOPIC, "*", PatternType.LITERAL),
              new AccessControlEntry(
                  "User:" + OPERATOR, "*", AclOperation.ALL, AclPermissionType.ALLOW)));
      admin.createAcls(acls).all().get();
    } catch (ExecutionException e) {
      throw new IllegalStateException("cannot set up the secured broker: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while setting up the secured broker", e);
    }
  }

  /**
   * The Kafka client settings of {@code user} on a SASL_SSL SCRAM listener, as README gives them,
   * without a trust store (the JDK's trusted certificates).
   */
  public static Properties scramSettings(String bootstrapServers, String user, String password) {
    Properties p = new Properties();
    p.setProperty("bootstrap.servers", bootstrapServers);
    p.setProperty("security.protocol", "SASL_SSL");
    p.setProperty("sasl.mechanism", EmbeddedKafka.SCRAM);
    p.setProperty(
        "sasl.jaas.config",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + user
            + "\" password=\""
            + password
            + "\";");
    return p;
  }

  /** The Kafka client settings of {@code user}, as README gives them. */
  public Properties kafkaSettings(String bootstrapServers, String user, String password) {
    Properties p = scramSettings(bootstrapServers, user, password);
    p.setProperty("ssl.truststore.location", certificates.truststore().toString());
    p.setProperty("ssl.truststore.password", certificates.password());
    return p;
  }

  /** sendcap's settings: its Kafka principal and its Redis user over TLS. */
  public Properties sendcapSettings(String bootstrapServers, int redisTlsPort) {
    Properties p = kafkaSettings(bootstrapServers, SENDCAP, sendcapPassword);
    p.setProperty(
        "cap.redis.uri",
        "rediss://" + SENDCAP + ":" + sendcapPassword + "@127.0.0.1:" + redisTlsPort);
    p.setProperty("cap.redis.ssl.truststore.location", certificates.truststore().toString());
    p.setProperty("cap.redis.ssl.truststore.password", certificates.password());
    return p;
  }

  /** Writes {@code settings} as a properties file in {@link #dir()}, readable by its owner only. */
  public Path write(String name, Properties settings) {
    Path file = dir.resolve(name);
    try (Writer w = Files.newBufferedWriter(file)) {
      settings.store(w, "sendcap embedded --secure: settings with passwords; --config " + file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
    file.toFile().setReadable(false, false);
    file.toFile().setReadable(true, true);
    return file;
  }
}
