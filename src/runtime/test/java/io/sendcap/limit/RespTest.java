package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
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
}
