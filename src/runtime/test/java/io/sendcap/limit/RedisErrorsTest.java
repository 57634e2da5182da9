package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.RedisException;
import io.lettuce.core.RedisLoadingException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

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

  /** A reply as Lettuce hands it over: the command's future failed with the server's error. */
  private static Throwable reply(String error) {
    return new ExecutionException(new RedisCommandExecutionException(error));
  }

  @ParameterizedTest(name = "{0} is {1}")
  @CsvSource(
      delimiter = '|',
      value = {
        "LOADING Redis is loading the dataset in memory | OUTAGE",
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
            + " | OUTAGE",
        "CLUSTERDOWN The cluster is down | OUTAGE",
        "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
            + " | OUTAGE",
        "READONLY You can't write against a read only replica. | OUTAGE",
        "TRYAGAIN Multiple keys request during rehashing of slot | RETRY",
        "ASK 3999 127.0.0.1:6381 | RETRY",
        "MOVED 3999 127.0.0.1:6381 | RETRY",
        "WRONGTYPE Operation against a key holding the wrong kind of value | KEY",
        "WRONGTYPE Operation against a key holding the wrong kind of value script: 5f2a..., on"
            + " @user_script:12. | KEY",
        "NOPERM User sendcap has no permissions to run the 'evalsha' command | REFUSAL",
        "NOAUTH Authentication required. | REFUSAL",
        "WRONGPASS invalid username-password pair or user is disabled. | REFUSAL",
        "OOM command not allowed when used memory > 'maxmemory'. | REFUSAL",
        "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist"
            + " to disk. | REFUSAL",
        "ERR user_script:80: attempt to compare nil with number script: 5f2a..., on"
            + " @user_script:80. | REFUSAL",
        "ERR Error running script (call to f_5f2a...): @user_script:80: attempt to compare nil"
            + " | REFUSAL",
        "ERR unknown command 'EVALSHA', with args beginning with: | REFUSAL"
      })
  void aServersErrorReplyIsClassifiedByItsCode(String error, RedisErrors.Kind kind) {
    assertThat(RedisErrors.kind(reply(error))).isEqualTo(kind);
  }

  @Test
  void lostConnectionsAndTimeoutsAreOutages() {
    assertThat(RedisErrors.kind(new RedisConnectionException("Connection closed")))
        .isEqualTo(RedisErrors.Kind.OUTAGE);
    assertThat(RedisErrors.kind(new TimeoutException())).isEqualTo(RedisErrors.Kind.OUTAGE);
    assertThat(RedisErrors.kind(new RedisCommandTimeoutException("Command timed out")))
        .isEqualTo(RedisErrors.Kind.OUTAGE);
    assertThat(RedisErrors.kind(new ExecutionException(new RedisLoadingException("LOADING x"))))
        .isEqualTo(RedisErrors.Kind.OUTAGE);
    assertThat(RedisErrors.kind(null)).isEqualTo(RedisErrors.Kind.OUTAGE);
  }

  @Test
  void aRefusalUnderAConnectionErrorIsARefusal() {
    Throwable error =
        new RedisConnectionException(
            "Unable to connect to 127.0.0.1:6380",
            new RedisCommandExecutionException("NOAUTH Authentication required."));

    assertThat(RedisErrors.kind(error)).isEqualTo(RedisErrors.Kind.REFUSAL);
  }

  /**
   * A WRONGTYPE that fails a whole call, not one send's log (a global cap's counter another
   * application overwrote), is a refusal: waiting does not mend it, and health must say so.
   */
  @Test
  void aForeignKeyThatFailsAWholeCallIsARefusal() {
    assertThat(
            RedisErrors.failed(
                "global quota call failed",
                reply("WRONGTYPE Operation against a key holding the wrong kind of value")))
        .isInstanceOf(LimiterRefusedException.class);
    assertThat(RedisErrors.failed("call failed", reply("LOADING Redis is loading")))
        .isNotInstanceOf(LimiterRefusedException.class);
  }
}
