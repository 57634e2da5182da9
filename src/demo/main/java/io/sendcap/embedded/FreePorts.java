package io.sendcap.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Set;

/**
 * Free TCP ports on 127.0.0.1, found by binding port 0 and releasing it.
 *
 * <p>A port found this way is only probably still free when the server binds it; the window is
 * short enough for tests and demos.
 */
public final class FreePorts {
  /** The offset of a Redis Cluster node's bus port from its client port. */
  static final int CLUSTER_BUS_OFFSET = 10_000;

  private static final int MAX_PORT = 65_535;
  private static final int ATTEMPTS = 100;

  private FreePorts() {}

  /** Returns a port that is free on 127.0.0.1 right now. */
  public static int pick() {
    try (ServerSocket socket = bind(0)) {
      return socket.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("Could not find a free port on 127.0.0.1", e);
    }
  }

  /**
   * Returns a port that is free, whose cluster bus port (port + 10000) is free too, and neither of
   * which is in {@code taken}.
   */
  static int pickWithClusterBus(Set<Integer> taken) {
    for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
      int port = pick();
      int bus = port + CLUSTER_BUS_OFFSET;
      if (bus <= MAX_PORT && !taken.contains(port) && !taken.contains(bus) && isFree(bus)) {
        return port;
      }
    }
    throw new IllegalStateException(
        "Could not find a free port whose cluster bus port (port + 10000) is also free after "
            + ATTEMPTS
            + " attempts");
  }

  /**
   * Returns {@code port} if it is free on 127.0.0.1, or a free one if it is 0.
   *
   * @throws IllegalArgumentException if it is taken, naming {@code option}
   */
  public static int orFree(int port, String option) {
    if (port == 0) {
      return pick();
    }
    if (port < 0 || port > MAX_PORT || !isFree(port)) {
      throw new IllegalArgumentException(
          "port "
              + port
              + " ("
              + option
              + ") is in use on 127.0.0.1 or not a port; choose another");
    }
    return port;
  }

  private static boolean isFree(int port) {
    try (ServerSocket socket = bind(port)) {
      return socket.isBound();
    } catch (IOException e) {
      return false;
    }
  }

  private static ServerSocket bind(int port) throws IOException {
    return new ServerSocket(port, 1, InetAddress.getLoopbackAddress());
  }
}
