package io.sendcap.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

class SecuredAccessTest {
  private static List<String> readme() throws IOException {
    return Files.readAllLines(Path.of("README.md"));
  }

  @Test
  void readmeListsExactlyTheRightsEmbeddedSecureGrants() throws IOException {
    assertThat(readme().stream().filter(l -> l.startsWith("--add --allow-principal ")).toList())
        .isEqualTo(SecuredAccess.KAFKA_ACLS);
    assertThat(readme().stream().filter(l -> l.startsWith("ACL SETUSER ")).toList())
        .containsExactly(SecuredAccess.REDIS_ACL, SecuredAccess.REDIS_CLUSTER_ACL);
  }

  @Test
  void anAclLineBecomesOneBindingPerResourceAndOperation() {
    assertThat(
            SecuredAccess.bindings(
                "--add --allow-principal User:sendcap --operation WRITE --operation DESCRIBE"
                    + " --resource-pattern-type prefixed --transactional-id sendcap-",
                "User:other"))
        .hasSize(2)
        .allSatisfy(
            b -> {
              assertThat(b.pattern().resourceType()).isEqualTo(ResourceType.TRANSACTIONAL_ID);
              assertThat(b.pattern().name()).isEqualTo("sendcap-");
              assertThat(b.pattern().patternType()).isEqualTo(PatternType.PREFIXED);
              assertThat(b.entry().principal()).isEqualTo("User:other");
            })
        .extracting(b -> b.entry().operation())
        .containsExactly(AclOperation.WRITE, AclOperation.DESCRIBE);
  }
}
