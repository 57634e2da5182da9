package io.sendcap.embedded;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.StringJoiner;

/**
 * A minimal Redis client that sends one command per connection over the RESP protocol, so that the
 * embedded servers can be probed and configured without a Redis client library.
 *
 * <p>Replies that are simple strings, bulk strings and integers are returned as text, arrays as
 * their elements one per line; a Redis error reply becomes an {@link IOException} carrying its
 * message.
 */
final class Resp {
  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private Resp() {}

  /**
   * Sends one command to the Redis server on 127.0.0.1 at {@code port} and returns its reply.
   *
   * @return the reply as text, or {@code null} for a null bulk string
   * @throws IOException if the server cannot be reached, closes the connection or replies an error
   */
  static String call(int port, String... command) throws IOException {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), (int) TIMEOUT.toMillis());
      socket.setSoTimeout((int) TIMEOUT.toMillis());
      OutputStream out = socket.getOutputStream();
      out.write(encode(command));
      out.flush();
      return readReply(new BufferedInputStream(socket.getInputStream()));
    }
  }

  private static byte[] encode(String... command) {
    StringBuilder request = new StringBuilder().append('*').append(command.length).append("\r\n");
    for (String argument : command) {
      int length = argument.getBytes(StandardCharsets.UTF_8).length;
      request.append('$').append(length).append("\r\n").append(argument).append("\r\n");
    }
    return request.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static String readReply(InputStream in) throws IOException {
    int type = in.read();
    if (type == -1) {
      throw new EOFException("Redis closed the connection without a reply");
    }
    String line = readLine(in);
    return switch (type) {
      case '+', ':' -> line;
      case '-' -> throw new IOException("Redis replied: " + line);
      case '$' -> readBulk(in, Integer.parseInt(line));
      case '*' -> readArray(in, Integer.parseInt(line));
      default -> throw new IOException("Unsupported RESP reply type '" + (char) type + "'");
    };
  }

  /** An array's elements, nested arrays flattened, one per line; {@code null} for a null array. */
  private static String readArray(InputStream in, int length) throws IOException {
    if (length < 0) {
      return null;
    }
    StringJoiner elements = new StringJoiner("\n");
    for (int i = 0; i < length; i++) {
      elements.add(String.valueOf(readReply(in)));
    }
    return elements.toString();
  }

  private static String readBulk(InputStream in, int length) throws IOException {
    if (length < 0) {
      return null;
    }
    byte[] bulk = in.readNBytes(length);
    if (bulk.length < length) {
      throw new EOFException("Redis closed the connection in the middle of a reply");
    }
    readLine(in);
    return new String(bulk, StandardCharsets.UTF_8);
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int previous = -1;
    for (int b = in.read(); b != -1; b = in.read()) {
      if (previous == '\r' && b == '\n') {
        byte[] bytes = line.toByteArray();
        return new String(bytes, 0, bytes.length - 1, StandardCharsets.UTF_8);
      }
      line.write(b);
      previous = b;
    }
    throw new EOFException("Redis closed the connection in the middle of a reply");
  }
}
