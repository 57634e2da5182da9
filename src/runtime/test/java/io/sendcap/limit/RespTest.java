package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class RespTest {
  @Test
  void commandsAreArraysOfBulkStrings() {
    byte[] encoded =
        Resp.command(
            new byte[][] {"EVALSHA".getBytes(StandardCharsets.UTF_8)},
            new byte[][] {new byte[] {0, '\r', '\n'}});

    assertThat(new String(encoded, StandardCharsets.ISO_8859_1))
        .isEqualTo("*2\r\n$7\r\nEVALSHA\r\n$3\r\n\0\r\n\r\n");
  }

  @Test
  void lengthsOfSeveralDigitsAreWrittenWhole() {
    byte[] ten = "0123456789".getBytes(StandardCharsets.US_ASCII);
    byte[][] args = Collections.nCopies(12, ten).toArray(new byte[0][]);

    assertThat(new String(Resp.command(args), StandardCharsets.US_ASCII))
        .isEqualTo("*12\r\n" + "$10\r\n0123456789\r\n".repeat(12));
  }

  @Test
  void decimalsAreWhatLongToStringWrites() {
    SplittableRandom random = new SplittableRandom(16);
    for (int i = 0; i < 100_000; i++) {
      // every magnitude, from one digit to nineteen, and both signs
      long n = random.nextLong() >> random.nextInt(64);
      assertDecimal(n);
    }
    for (long edge :
        new long[] {
          0,
          1,
          -1,
          9,
          10,
          99,
          100,
          999_999_999_999L,
          1_000_000_000_000L,
          Long.MAX_VALUE,
          Long.MIN_VALUE,
          Long.MIN_VALUE + 1,
          999_999_999_999_999_999L,
          1_000_000_000_000_000_000L
        }) {
      assertDecimal(edge);
    }
  }

  private static void assertDecimal(long n) {
    assertThat(new String(Resp.decimal(n), StandardCharsets.US_ASCII))
        .as("%d", n)
        .isEqualTo(Long.toString(n));
    byte[] at3 = new byte[3 + Resp.decimalLength(n)];
    assertThat(Resp.putDecimal(at3, 3, n)).isEqualTo(at3.length);
    assertThat(new String(at3, 3, at3.length - 3, StandardCharsets.US_ASCII))
        .as("%d at an offset", n)
        .isEqualTo(Long.toString(n));
  }
}
