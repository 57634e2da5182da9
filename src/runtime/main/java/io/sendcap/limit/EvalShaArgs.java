package io.sendcap.limit;

import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.protocol.CommandArgs;
import io.netty.buffer.ByteBuf;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The arguments of one EVALSHA of a {@link ScriptCall} (the script's digest, the number of keys,
 * the keys, the arguments), written to the connection as one piece.
 *
 * <p>Lettuce writes each argument of a command on its own, and a call of sixteen sends has about
 * seventy: its I/O thread spent more time in that than in anything else. This lays the arguments
 * out as RESP bulk strings in one array when Lettuce encodes the command (on its I/O thread; again,
 * on another node's, should a cluster redirect it) and writes that array in one copy.
 */
final class EvalShaArgs extends CommandArgs<byte[], byte[]> {
  private final byte[] sha;
  private final ScriptCall call;

  EvalShaArgs(byte[] sha, ScriptCall call) {
    super(ByteArrayCodec.INSTANCE);
    this.sha = sha;
    this.call = call;
  }

  @Override
  public int count() {
    return 2 + call.keys().length + call.args().length;
  }

  @Override
  public void encode(ByteBuf buf) {
    buf.writeBytes(encode(sha, call));
  }

  /** The first key, for a cluster connection to find the call's slot; null when there is none. */
  @Override
  public ByteBuffer getFirstEncodedKey() {
    return call.keys().length == 0 ? null : ByteBuffer.wrap(call.keys()[0]);
  }

  @Override
  public String toCommandString() {
    return new String(sha, StandardCharsets.US_ASCII)
        + " "
        + call.keys().length
        + " key(s) "
        + call.args().length
        + " argument(s)";
  }

  @Override
  public String toString() {
    return getClass().getSimpleName() + " [" + toCommandString() + "]";
  }

  /** The digest, the number of keys, the keys and the arguments as consecutive bulk strings. */
  static byte[] encode(byte[] sha, ScriptCall call) {
    return Resp.bulkStrings(
        new byte[][] {sha, Resp.decimal(call.keys().length)}, call.keys(), call.args());
  }
}
