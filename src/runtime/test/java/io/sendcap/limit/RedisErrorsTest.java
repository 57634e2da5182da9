package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import org.junit.jupiter.api.Test;

class RedisErrorsTest {
  @Test
  void aStandaloneRefusalDeepUnderTheConnectionErrorIsNamed() {
    Throwable error =
        new RedisConnectionException(
            "Unable to connect to 127.0.0.1:6380",
            new RedisCommandExecutionException(
                "WRONGPASS invalid username-password pair or user is disabled."));

    assertThat(RedisErrors.describe(error))
        .isEqualTo(
            "Redis refused the user name and password of cap.redis.uri (WRONGPASS invalid"
                + " username-password pair or user is disabled.)");
  }

  @Test
  void aClusterClientsRefusalOnALineOfItsOwnIsNamedInOneLine() {
    // as Lettuce reports seed nodes that refuse the topology discovery
    Throwable error =
        new RedisException(
            "Unable to establish a connection to Redis Cluster",
            new RedisException(
                "Cannot retrieve cluster partitions from [rediss://sendcap:*****@127.0.0.1:7000]\n"
                    + "\t[rediss://sendcap:*****@127.0.0.1:7000]: NOPERM this user has no"
                    + " permissions to run the 'cluster|nodes' command\n"));

    assertThat(RedisErrors.describe(error))
        .isEqualTo(
            "Redis's ACL refuses sendcap's user a command or key it needs: NOPERM this user has"
                + " no permissions to run the 'cluster|nodes' command; grant the rule of README,"
                + " \"Running against a secured Redis\"")
        .doesNotContain("\n");
  }

  @Test
  void aRefusalInASuppressedExceptionIsFound() {
    RedisException error = new RedisException("Cannot retrieve cluster partitions");
    error.addSuppressed(new RedisCommandExecutionException("NOAUTH Authentication required."));

    assertThat(RedisErrors.describe(error)).startsWith("Redis requires a user and password");
  }

  @Test
  void anythingElseIsTheDeepestCausesMessage() {
    Throwable error =
        new RedisConnectionException(
            "Unable to connect", new java.net.ConnectException("Connection refused"));

    assertThat(RedisErrors.describe(error)).isEqualTo("Connection refused");
  }
}
