package io.sendcap.limit;

import java.nio.charset.StandardCharsets;
import java.util.List;

/** Redis's wire protocol (RESP), as far as sendcap writes it by hand: commands of bulk strings. */
public final class Resp {
  private Resp() {}

  /** One command as a RESP array of bulk strings, as {@code redis-cli} or any client sends it. */
  public static byte[] command(List<byte[]> args) {
    byte[] count = Long.toString(args.size()).getBytes(StandardCharsets.US_ASCII);
    int size = 1 + count.length + 2;
    for (byte[] arg : args) {
      size += bulkStringSize(arg);
    }
    byte[] out = new byte[size];
    out[0] = '*';
    System.arraycopy(count, 0, out, 1, count.length);
    int at = crlf(out, 1 + count.length);
    for (byte[] arg : args) {
      at = putBulkString(out, at, arg);
    }
    return out;
  }

  /** The bytes of {@code value} as a bulk string: {@code $<length>\r\n<value>\r\n}. */
  static int bulkStringSize(byte[] value) {
    return 1 + digits(value.length) + 2 + value.length + 2;
  }

  /** Writes {@code value} as a bulk string at {@code at}; returns where the next one goes. */
  static int putBulkString(byte[] out, int at, byte[] value) {
    out[at] = '$';
    int end = at + 1 + digits(value.length);
    for (int n = value.length, i = end - 1; i > at; i--, n /= 10) {
      out[i] = (byte) ('0' + n % 10);
    }
    at = crlf(out, end);
    System.arraycopy(value, 0, out, at, value.length);
    return crlf(out, at + value.length);
  }

  private static int crlf(byte[] out, int at) {
    out[at] = '\r';
    out[at + 1] = '\n';
    return at + 2;
  }

  /** The decimal digits of a length: most arguments are a few bytes long. */
  private static int digits(int n) {
    if (n < 10) {
      return 1;
    }
    if (n < 100) {
      return 2;
    }
    int d = 3;
    for (int bound = 1000; n >= bound && d < 10; bound *= 10) {
      d++;
    }
    return d;
  }
}
