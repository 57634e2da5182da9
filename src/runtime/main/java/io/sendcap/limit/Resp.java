package io.sendcap.limit;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** Redis's wire protocol (RESP), as far as sendcap writes it by hand: commands of bulk strings. */
public final class Resp {
  private Resp() {}

  /**
   * One command as a RESP array of bulk strings, as {@code redis-cli} or any client sends it: the
   * values of {@code parts}, in order.
   */
  public static byte[] command(byte[][]... parts) {
    return strings(true, parts);
  }

  /** The values of {@code parts} as consecutive bulk strings, without the array's header. */
  static byte[] bulkStrings(byte[][]... parts) {
    return strings(false, parts);
  }

  private static byte[] strings(boolean asArray, byte[][]... parts) {
    int count = 0;
    int size = 0;
    for (byte[][] part : parts) {
      for (byte[] value : part) {
        count++;
        size += 1 + digits(value.length) + 2 + value.length + 2;
      }
    }
    byte[] header =
        asArray ? ("*" + count + "\r\n").getBytes(StandardCharsets.US_ASCII) : new byte[0];
    byte[] out = Arrays.copyOf(header, header.length + size);
    int at = header.length;
    for (byte[][] part : parts) {
      for (byte[] value : part) {
        at = putBulkString(out, at, value);
      }
    }
    return out;
  }

  /** Writes {@code value} as a bulk string at {@code at}; returns where the next one goes. */
  private static int putBulkString(byte[] out, int at, byte[] value) {
    out[at] = '$';
    int end = at + 1 + digits(value.length);
    putDigits(out, end, value.length);
    at = crlf(out, end);
    System.arraycopy(value, 0, out, at, value.length);
    return crlf(out, at + value.length);
  }

  private static int crlf(byte[] out, int at) {
    out[at] = '\r';
    out[at + 1] = '\n';
    return at + 2;
  }

  /**
   * {@code n} in decimal, as Redis reads an integer argument and the script's {@code tonumber} a
   * number: written straight into its bytes, as a call carries numbers for each shape and send.
   */
  static byte[] decimal(long n) {
    byte[] out = new byte[decimalLength(n)];
    putDecimal(out, 0, n);
    return out;
  }

  /** The length of {@code n} in decimal. */
  static int decimalLength(long n) {
    if (n == Long.MIN_VALUE) {
      return MIN_VALUE.length;
    }
    return (n < 0 ? 1 : 0) + digits(Math.abs(n));
  }

  /** Writes {@code n} in decimal at {@code at}; returns where the next byte goes. */
  static int putDecimal(byte[] out, int at, long n) {
    if (n == Long.MIN_VALUE) {
      System.arraycopy(MIN_VALUE, 0, out, at, MIN_VALUE.length);
      return at + MIN_VALUE.length;
    }
    int end = at + decimalLength(n);
    putDigits(out, end, Math.abs(n));
    if (n < 0) {
      out[at] = '-';
    }
    return end;
  }

  /** The one number whose magnitude a long cannot hold. */
  private static final byte[] MIN_VALUE =
      Long.toString(Long.MIN_VALUE).getBytes(StandardCharsets.US_ASCII);

  /** Writes the decimal digits of {@code n}, not negative, to end just before {@code end}. */
  private static void putDigits(byte[] out, int end, long n) {
    int i = end;
    do {
      out[--i] = (byte) ('0' + n % 10);
      n /= 10;
    } while (n > 0);
  }

  /** The decimal digits of {@code n}, not negative: most lengths and numbers are short. */
  private static int digits(long n) {
    if (n < 10) {
      return 1;
    }
    if (n < 100) {
      return 2;
    }
    int d = 3;
    for (long bound = 1000; d < 19 && n >= bound; bound *= 10) {
      d++;
    }
    return d;
  }
}
