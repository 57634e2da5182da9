package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** sendcap's one-piece EVALSHA arguments against Lettuce's own encoding of the same call. */
class EvalShaArgsTest {
  private static final byte[] SHA =
      "e0e1f9fabfc9d4800c877a703b823ac0578ff8db".getBytes(StandardCharsets.US_ASCII);

  /** What {@code evalsha(sha, MULTI, keys, args)} hands Lettuce to write. */
  private static CommandArgs<byte[], byte[]> lettuces(ScriptCall call) {
    return new CommandArgs<>(ByteArrayCodec.INSTANCE)
        .add(new String(SHA, StandardCharsets.US_ASCII))
        .add(call.keys().length)
        .addKeys(call.keys())
        .addValues(call.args());
  }

  private static byte[] written(CommandArgs<byte[], byte[]> args) {
    ByteBuf buf = Unpooled.buffer();
    args.encode(buf);
    return ByteBufUtil.getBytes(buf);
  }

  private static byte[] bytes(SplittableRandom random, int maxLength) {
    byte[] b = new byte[random.nextInt(maxLength + 1)];
    random.nextBytes(b);
    return b;
  }

  @Test
  void writesTheBytesLettuceWouldForAnyKeysAndArguments() {
    SplittableRandom random = new SplittableRandom(3);
    for (int i = 0; i < 500; i++) {
      // lengths of one to three digits, empty values, and bytes that look like CRLF
      byte[][] keys = new byte[random.nextInt(20)][];
      for (int k = 0; k < keys.length; k++) {
        keys[k] = bytes(random, 120);
      }
      byte[][] args = new byte[random.nextInt(80)][];
      for (int a = 0; a < args.length; a++) {
        args[a] = bytes(random, random.nextBoolean() ? 12 : 1100);
      }
      ScriptCall call = new ScriptCall(keys, args);
      EvalShaArgs ours = new EvalShaArgs(SHA, call);

      assertThat(written(ours)).as("call %d", i).isEqualTo(written(lettuces(call)));
      assertThat(ours.count()).isEqualTo(lettuces(call).count());
      assertThat(ours.getFirstEncodedKey()).isEqualTo(lettuces(call).getFirstEncodedKey());
    }
  }

  @Test
  void aRedirectedCallIsWrittenAgainTheSame() {
    ScriptCall call =
        new ScriptCall(new byte[][] {{'s', '{', '1', '}'}}, new byte[][] {{'3'}, {'0'}});
    EvalShaArgs args = new EvalShaArgs(SHA, call);

    assertThat(written(args)).isEqualTo(written(args)).isEqualTo(written(lettuces(call)));
  }

  @Test
  void aCallWithoutKeysHasNoSlot() {
    ScriptCall call = new ScriptCall(new byte[0][], new byte[][] {{'3'}});
    EvalShaArgs args = new EvalShaArgs(SHA, call);

    assertThat(args.getFirstEncodedKey()).isNull();
    assertThat(ByteBuffer.wrap(written(args))).isEqualTo(ByteBuffer.wrap(written(lettuces(call))));
  }
}
