package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

class CallBuilderTest {
  private static final long NOW = 1_790_000_000_000L;

  private final CallBuilder builder = new CallBuilder(new UserKeys("s", 0), 0, 0, 16, false);

  @Test
  void channelsWithTheSameCapsShareOneShape() {
    Policy policy =
        new Policy(
            "p",
            List.of(new Cap("1d", Duration.ofDays(1), 2), new Cap("7d", Duration.ofDays(7), 5)),
            Duration.ZERO);
    byte[][] args = onlyCall(policy, Channel.EMAIL, Channel.PUSH, Channel.SMS);

    // the first send's arguments follow ARGV[1], ARGV[2] and one shape of two caps
    assertThat(number(args[0])).isEqualTo(3 + 4 + 2 * 5);
    assertThat(shapeIndexes(args)).containsExactly(3L, 3L, 3L);
  }

  @Test
  void aChannelCapMakesAShapeOfItsOwn() {
    Policy policy =
        new Policy(
            "p",
            List.of(
                new Cap("1d", Duration.ofDays(1), 2),
                new Cap("7d", Cap.Kind.ROLLING, Duration.ofDays(7), 1, Channel.SMS)),
            Duration.ZERO);
    byte[][] args = onlyCall(policy, Channel.EMAIL, Channel.SMS, Channel.PUSH);

    // EMAIL and PUSH: the 1d cap (4 + 5 arguments from ARGV[3]); SMS: both caps (4 + 10 after)
    assertThat(number(args[0])).isEqualTo(3 + 9 + 14);
    assertThat(shapeIndexes(args)).containsExactly(3L, 12L, 3L);
  }

  /** The arguments of the one call deciding a send on each channel, to users 1, 2, ... */
  private byte[][] onlyCall(Policy policy, Channel... channels) {
    List<CapRequest> sends = new ArrayList<>();
    for (Channel channel : channels) {
      sends.add(new CapRequest(sends.size() + 1, "m" + sends.size(), NOW, policy, channel, null));
    }
    List<CallBuilder.Call> calls = builder.calls(sends);
    assertThat(calls).hasSize(1);
    return calls.get(0).script().args();
  }

  /** Each send's shape index: the third of its arguments (no calendar caps here). */
  private static List<Long> shapeIndexes(byte[][] args) {
    int first = (int) number(args[0]) - 1;
    return IntStream.iterate(first + 2, i -> i < args.length, i -> i + 3)
        .mapToObj(i -> number(args[i]))
        .toList();
  }

  private static long number(byte[] arg) {
    return Long.parseLong(new String(arg, StandardCharsets.US_ASCII));
  }
}
