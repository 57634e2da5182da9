package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import io.sendcap.config.Cap;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
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

    // the time floor, one shape of two caps, the sends
    assertThat(args.length).isEqualTo(1 + 4 + 2 * 5 + 1);
    assertThat(shapeIndexes(args)).containsExactly(2, 2, 2);
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

    // EMAIL and PUSH: the 1d cap (4 + 5 arguments from ARGV[2]); SMS: both caps (4 + 10 after)
    assertThat(args.length).isEqualTo(1 + 9 + 14 + 1);
    assertThat(shapeIndexes(args)).containsExactly(2, 11, 2);
  }

  @Test
  void sendsWhoseShapesOverflowOneCallsArgumentsGoToAnotherCall() {
    List<Cap> caps = new ArrayList<>();
    for (int c = 0; c < Policies.MAX_CAPS; c++) {
      caps.add(new Cap(c + 1 + "d", Duration.ofDays(c + 1), 5));
    }
    CallBuilder wide = new CallBuilder(new UserKeys("s", 0), 0, 0, 1000, false);
    List<CapRequest> sends = new ArrayList<>();
    for (int p = 0; p < 300; p++) {
      Policy policy = new Policy("p" + p, caps, Duration.ZERO);
      sends.add(new CapRequest(p + 1, "m" + p, NOW, policy, Channel.EMAIL, null));
    }

    List<CallBuilder.Call> calls = wide.calls(sends);

    assertThat(calls).hasSizeGreaterThan(1);
    assertThat(calls.stream().mapToInt(c -> c.script().keys().length).sum()).isEqualTo(300);
    for (CallBuilder.Call call : calls) {
      byte[][] args = call.script().args();
      assertThat(args.length).isLessThanOrEqualTo(Short.MAX_VALUE);
      assertThat(shapeIndexes(args)).allSatisfy(index -> assertThat(index).isPositive());
    }
  }

  @Test
  void theCalendarPeriodsKeptForTheSendsZonesAreBounded() {
    Policy policy =
        new Policy(
            "p",
            List.of(new Cap("day", Cap.Kind.CALENDAR_DAY, Duration.ofDays(1), 1, null)),
            Duration.ZERO);
    List<CapRequest> sends = new ArrayList<>();
    for (int s = 0; s < 4 * CallBuilder.MAX_ZONES; s++) {
      ZoneId zone = ZoneOffset.ofTotalSeconds(s); // every one a valid, distinct zone
      sends.add(new CapRequest(s + 1, "m" + s, NOW, policy, Channel.EMAIL, zone));
    }

    builder.calls(sends);

    assertThat(builder.zonesHeld()).isPositive().isLessThanOrEqualTo(CallBuilder.MAX_ZONES);
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

  /** Each send's shape index, read from the last argument (no calendar caps here). */
  private static List<Integer> shapeIndexes(byte[][] args) {
    ByteBuffer sends = ByteBuffer.wrap(args[args.length - 1]);
    List<Integer> indexes = new ArrayList<>();
    while (sends.hasRemaining()) {
      indexes.add((int) sends.getShort());
      byte[] score = new byte[sends.get()];
      sends.get(score);
      assertThat(Long.parseLong(new String(score, StandardCharsets.US_ASCII))).isEqualTo(NOW);
      sends.position(sends.position() + MessageIds.LENGTH);
    }
    return indexes;
  }
}
