package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CallBuilderAsciiTest {
  @Test
  void writesWhatLongToStringWrites() {
    SplittableRandom random = new SplittableRandom(16);
    for (int i = 0; i < 100_000; i++) {
      // every magnitude, from one digit to nineteen, and both signs
      long n = random.nextLong() >> random.nextInt(64);
      assertAscii(n);
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
      assertAscii(edge);
    }
  }

  private static void assertAscii(long n) {
    assertThat(new String(CallBuilder.ascii(n), StandardCharsets.US_ASCII))
        .as("%d", n)
        .isEqualTo(Long.toString(n));
  }
}
