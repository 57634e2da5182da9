package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class RawPipelineTest {
  private static InputStream replies(String text) {
    return new ByteArrayInputStream(text.getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void eachReplyIsReadToItsEndAndErrorsAreCounted() throws IOException {
    InputStream in =
        replies(
            "*8\r\n:0\r\n:0\r\n:0\r\n:17\r\n:2\r\n:1\r\n:2\r\n:99\r\n"
                + ":1\r\n"
                + "$5\r\nab\r\nc\r\n"
                + "$-1\r\n"
                + "-NOSCRIPT No matching script\r\n"
                + "*2\r\n+OK\r\n-ERR inner\r\n"
                + "+last\r\n");
    assertThat(RawPipeline.skipReply(in)).isZero();
    assertThat(RawPipeline.skipReply(in)).isZero();
    assertThat(RawPipeline.skipReply(in)).as("a bulk string holding CRLF").isZero();
    assertThat(RawPipeline.skipReply(in)).as("a null bulk string").isZero();
    assertThat(RawPipeline.skipReply(in)).isEqualTo(1);
    assertThat(RawPipeline.skipReply(in)).isEqualTo(1);
    assertThat(RawPipeline.skipReply(in)).isZero();
    assertThatThrownBy(() -> RawPipeline.skipReply(in)).isInstanceOf(EOFException.class);
  }
}
