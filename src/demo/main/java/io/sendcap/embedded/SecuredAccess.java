package io.sendcap.embedded;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The least rights sendcap needs on a secured Kafka cluster and a secured Redis, as README's
 * "Running against a secured Kafka cluster" and "... Redis" list them for an operator (for the
 * default topic names, {@code application.id=sendcap} and {@code cap.redis.key-prefix=s}): {@code
 * embedded --secure} grants them, and {@code SecuredAccessTest} keeps README's lines equal to
 * these.
 */
public final class SecuredAccess {
  /** The arguments of each {@code kafka-acls.sh} an operator runs for sendcap's principal. */
  public static final List<String> KAFKA_ACLS =
      List.of(
          "--add --allow-principal User:sendcap --operation READ --operation DESCRIBE --topic"
              + " campaign-sends --topic segments --topic policies",
          "--add --allow-principal User:sendcap --operation WRITE --operation DESCRIBE --topic"
              + " deliveries --topic suppressed --topic campaign-sends-dlq",
          "--add --allow-principal User:sendcap --operation ALL --resource-pattern-type prefixed"
              + " --topic sendcap-",
          "--add --allow-principal User:sendcap --operation READ --group sendcap",
          "--add --allow-principal User:sendcap --operation WRITE --operation DESCRIBE"
              + " --resource-pattern-type prefixed --transactional-id sendcap-");

  /** The Redis ACL rule of sendcap's user; {@code PASSWORD} stands for its password. */
  public static final String REDIS_ACL =
      "ACL SETUSER sendcap on >PASSWORD resetkeys ~s* resetchannels -@all +ping +hello"
          + " +script|load +evalsha +zscan +zrange +zremrangebyrank +zadd +pexpire +get +incrby +decrby";

  /**
   * What sendcap's Redis user needs besides {@link #REDIS_ACL} on every node of a Redis Cluster
   * (ACL users are each node's own): the cluster client's topology discovery and refresh.
   */
  public static final String REDIS_CLUSTER_ACL = "ACL SETUSER sendcap +cluster|nodes";

  private SecuredAccess() {}

  /**
   * The bindings of {@code kafka-acls.sh} arguments such as those of {@link #KAFKA_ACLS}, granted
   * to {@code principal} ({@code User:NAME}) instead of the one the line names.
   */
  public static List<AclBinding> bindings(String line, String principal) {
    String[] words = line.trim().split("\\s+");
    List<AclOperation> operations = new ArrayList<>();
    List<ResourcePattern> resources = new ArrayList<>();
    PatternType patternType = PatternType.LITERAL;
    List<String[]> named = new ArrayList<>();
    for (int i = 0; i < words.length; i++) {
      switch (words[i]) {
        case "--add" -> {}
        case "--allow-principal" -> i++;
        case "--operation" -> operations.add(AclOperation.valueOf(upper(words[++i])));
        case "--resource-pattern-type" -> patternType = PatternType.valueOf(upper(words[++i]));
        case "--topic", "--group", "--transactional-id" ->
            named.add(new String[] {words[i], words[++i]});
        default ->
            throw new IllegalArgumentException("unexpected " + words[i] + " in ACL line: " + line);
      }
    }
    for (String[] n : named) {
      ResourceType type =
          switch (n[0]) {
            case "--topic" -> ResourceType.TOPIC;
            case "--group" -> ResourceType.GROUP;
            default -> ResourceType.TRANSACTIONAL_ID;
          };
      resources.add(new ResourcePattern(type, n[1], patternType));
    }
    List<AclBinding> bindings = new ArrayList<>();
    for (ResourcePattern resource : resources) {
      for (AclOperation operation : operations) {
        bindings.add(
            new AclBinding(
                resource,
                new AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW)));
      }
    }
    return bindings;
  }

  private static String upper(String word) {
    return word.toUpperCase(Locale.ROOT);
  }
}
