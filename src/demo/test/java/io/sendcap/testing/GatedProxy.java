package io.sendcap.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on 127.0.0.1 in front of a server, for tests that need the server to receive a
 * client's bytes in two parts: {@link #hold(long)} lets only so many more bytes from the clients
 * through, and {@link #release()} the rest. Replies flow freely. A connection closed on one side is
 * closed on the other, so a client sees the server restart.
 */
public final class GatedProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int upstreamPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private final Object gate = new Object();
  private long allowance = Long.MAX_VALUE;

  private GatedProxy(int upstreamPort) throws IOException {
    this.upstreamPort = upstreamPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    thread("gated-proxy-accept", this::accept);
  }

  /** Starts a proxy to the server listening on {@code upstreamPort} of 127.0.0.1. */
  public static GatedProxy to(int upstreamPort) {
    try {
      return new GatedProxy(upstreamPort);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The port clients connect to. */
  public int port() {
    return server.getLocalPort();
  }

  /** From now on, lets only {@code bytes} more bytes from the clients through, then holds them. */
  public void hold(long bytes) {
    synchronized (gate) {
      allowance = bytes;
    }
  }

  /** Lets every byte from the clients through again, the held ones first. */
  public void release() {
    synchronized (gate) {
      allowance = Long.MAX_VALUE;
      gate.notifyAll();
    }
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket upstream;
        try {
          upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
        } catch (IOException e) {
          client
              .close(); // the server is down: the client sees its connection refused, as without us
          continue;
        }
        sockets.add(client);
        sockets.add(upstream);
        thread("gated-proxy-up", () -> copy(client, upstream, true));
        thread("gated-proxy-down", () -> copy(upstream, client, false));
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void copy(Socket from, Socket to, boolean gated) {
    byte[] buffer = new byte[8192];
    try (from;
        to) {
      InputStream in = from.getInputStream();
      OutputStream out = to.getOutputStream();
      int read;
      while ((read = in.read(buffer)) >= 0) {
        int written = 0;
        while (written < read) {
          int n = gated ? take(read - written) : read - written;
          out.write(buffer, written, n);
          written += n;
        }
        out.flush();
      }
    } catch (IOException | InterruptedException e) {
      // one side closed: both are closed on the way out
    } finally {
      sockets.remove(from);
      sockets.remove(to);
    }
  }

  /** Waits until some of {@code wanted} bytes may pass; returns how many. */
  private int take(int wanted) throws InterruptedException {
    synchronized (gate) {
      while (allowance == 0) {
        gate.wait();
      }
      int n = (int) Math.min(wanted, allowance);
      if (allowance != Long.MAX_VALUE) {
        allowance -= n;
      }
      return n;
    }
  }

  private static void thread(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.start();
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (IOException e) {
      // closing anyway
    }
    for (Socket s : sockets) {
      try {
        s.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
    release();
  }
}
