package io.sendcap.bench;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Drives Redis the way {@code redis-benchmark -P} does: requests encoded before timing, written on
 * a plain socket many at a time, and replies only scanned for their end. What it measures is what
 * the server can do, with as little client cost as possible.
 */
final class RawPipeline implements AutoCloseable {
  private final Socket socket;
  private final OutputStream out;
  private final InputStream in;

  RawPipeline(String host, int port) throws IOException {
    socket = new Socket();
    socket.connect(new InetSocketAddress(host, port), 5_000);
    socket.setTcpNoDelay(true);
    out = socket.getOutputStream();
    in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
  }

  /** Encodes one command as a RESP array of bulk strings. */
  static byte[] encode(List<byte[]> args) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    writeLine(b, "*" + args.size());
    for (byte[] arg : args) {
      writeLine(b, "$" + arg.length);
      b.writeBytes(arg);
      b.writeBytes(CRLF);
    }
    return b.toByteArray();
  }

  private static final byte[] CRLF = {'\r', '\n'};

  private static void writeLine(ByteArrayOutputStream b, String line) {
    b.writeBytes(line.getBytes(StandardCharsets.US_ASCII));
    b.writeBytes(CRLF);
  }

  /**
   * Sends the requests {@code depth} at a time, reading the replies of each group before the next
   * is written; returns the number of error replies.
   */
  int run(List<byte[]> requests, int depth) throws IOException {
    int errors = 0;
    for (int i = 0; i < requests.size(); i += depth) {
      int end = Math.min(requests.size(), i + depth);
      for (int j = i; j < end; j++) {
        out.write(requests.get(j));
      }
      out.flush();
      for (int j = i; j < end; j++) {
        errors += skipReply(in);
      }
    }
    return errors;
  }

  /** Reads one RESP reply and returns 1 if it is (or holds) an error, 0 otherwise. */
  static int skipReply(InputStream in) throws IOException {
    int type = in.read();
    if (type < 0) {
      throw new EOFException("Redis closed the connection");
    }
    String line = readLine(in);
    switch (type) {
      case '+', ':':
        return 0;
      case '-':
        return 1;
      case '$':
        int length = Integer.parseInt(line);
        if (length >= 0) {
          in.readNBytes(length + 2);
        }
        return 0;
      case '*':
        int errors = 0;
        for (int k = Integer.parseInt(line); k > 0; k--) {
          errors += skipReply(in);
        }
        return errors;
      default:
        throw new IOException("not a RESP reply: type byte " + type);
    }
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder line = new StringBuilder();
    int c;
    while ((c = in.read()) != '\r') {
      if (c < 0) {
        throw new EOFException("Redis closed the connection in a reply");
      }
      line.append((char) c);
    }
    in.read();
    return line.toString();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
