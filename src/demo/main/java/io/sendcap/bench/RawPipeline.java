package io.sendcap.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Drives Redis the way {@code redis-benchmark -c N -P depth} does: requests encoded before timing,
 * written on plain sockets with many always in flight, and replies only scanned for their end. What
 * it measures is what the server can do, with as little client cost as possible.
 */
final class RawPipeline implements AutoCloseable {
  private final Socket socket;
  private final OutputStream out;
  private final InputStream in;

  RawPipeline(String host, int port) throws IOException {
    socket = new Socket();
    socket.connect(new InetSocketAddress(host, port), 5_000);
    socket.setTcpNoDelay(true);
    out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
    in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
  }

  /**
   * Sends the requests with up to {@code depth} of them always in flight: a writer thread writes
   * while this thread reads the replies, so the server never waits for the client between groups.
   * Returns the number of error replies.
   */
  int run(List<byte[]> requests, int depth) throws IOException {
    Semaphore window = new Semaphore(depth);
    AtomicReference<IOException> writeFailure = new AtomicReference<>();
    Thread writer =
        new Thread(
            () -> write(requests, window, Math.max(1, depth / 4), writeFailure),
            "raw-pipeline-writer");
    writer.start();
    int errors = 0;
    boolean read = false;
    try {
      for (int i = 0; i < requests.size(); i++) {
        errors += skipReply(in);
        window.release();
      }
      read = true;
    } finally {
      if (!read) {
        // the writer may wait for room that no reply will make: unblock it, and let it fail
        socket.close();
        window.release(requests.size());
      }
      joinQuietly(writer);
    }
    if (writeFailure.get() != null) {
      throw writeFailure.get();
    }
    return errors;
  }

  private void write(
      List<byte[]> requests, Semaphore window, int chunk, AtomicReference<IOException> failure) {
    try {
      for (int i = 0; i < requests.size(); i += chunk) {
        int end = Math.min(requests.size(), i + chunk);
        window.acquireUninterruptibly(end - i);
        for (int j = i; j < end; j++) {
          out.write(requests.get(j));
        }
        out.flush();
      }
    } catch (IOException e) {
      failure.set(e);
      try {
        socket.close(); // the reader waits for replies to requests never sent
      } catch (IOException closing) {
        e.addSuppressed(closing);
      }
    }
  }

  private static void joinQuietly(Thread thread) {
    try {
      thread.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Drives one server with several connections at once, each on its own thread with {@code depth}
   * requests in flight: a saturating load, as {@code redis-benchmark -c N -P depth} makes. Each
   * list goes over its own connection, in order. Returns the number of error replies.
   */
  static int saturate(String host, int port, List<List<byte[]>> perConnection, int depth)
      throws IOException {
    List<RawPipeline> pipes = new ArrayList<>();
    try {
      for (int c = 0; c < perConnection.size(); c++) {
        pipes.add(new RawPipeline(host, port));
      }
      List<CompletableFuture<Integer>> runs = new ArrayList<>();
      for (int c = 0; c < pipes.size(); c++) {
        RawPipeline pipe = pipes.get(c);
        List<byte[]> requests = perConnection.get(c);
        runs.add(
            CompletableFuture.supplyAsync(
                () -> {
                  try {
                    return pipe.run(requests, depth);
                  } catch (IOException e) {
                    throw new UncheckedIOException(e);
                  }
                },
                runnable -> new Thread(runnable, "raw-pipeline").start()));
      }
      int errors = 0;
      for (CompletableFuture<Integer> run : runs) {
        errors += run.join();
      }
      return errors;
    } finally {
      for (RawPipeline pipe : pipes) {
        pipe.close();
      }
    }
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
