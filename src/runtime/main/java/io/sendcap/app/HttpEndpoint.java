package io.sendcap.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operators' HTTP endpoint: {@code /metrics} in the Prometheus text format, {@code
 * /health/live} and {@code /health/ready}, each answering 200 when up and 503 when not, with a
 * one-line JSON body saying why.
 */
final class HttpEndpoint implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HttpEndpoint.class);

  /** A health check's answer. */
  record Health(boolean up, String detail) {
    String json() {
      return "{\"status\":\""
          + (up ? "UP" : "DOWN")
          + "\",\"detail\":\""
          + detail.replace("\\", "\\\\").replace("\"", "\\\"")
          + "\"}\n";
    }
  }

  private final HttpServer server;

  private HttpEndpoint(HttpServer server) {
    this.server = server;
  }

  /**
   * Starts the endpoint on {@code port} (0: a free port) of the interface {@code host} ({@code
   * 0.0.0.0}: every interface).
   *
   * @throws UncheckedIOException if the address cannot be bound
   */
  static HttpEndpoint start(
      String host,
      int port,
      Supplier<String> metrics,
      Supplier<Health> live,
      Supplier<Health> ready) {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(host, port), 0);
      server.setExecutor(
          Executors.newSingleThreadExecutor(
              r -> {
                Thread t = new Thread(r, "sendcap-http");
                t.setDaemon(true);
                return t;
              }));
      server.createContext(
          "/metrics",
          e -> answer(e, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get()));
      server.createContext("/health/live", e -> health(e, live.get()));
      server.createContext("/health/ready", e -> health(e, ready.get()));
      server.start();
      LOG.info(
          "metrics on http://{}:{}/metrics, health on /health/live and /health/ready",
          host.equals("0.0.0.0") ? "localhost" : host,
          server.getAddress().getPort());
      return new HttpEndpoint(server);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot serve metrics on " + host + ":" + port + " (http.host, http.port)", e);
    }
  }

  private static void health(HttpExchange exchange, Health health) throws IOException {
    answer(exchange, health.up() ? 200 : 503, "application/json", health.json());
  }

  private static void answer(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", type);
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** The port it listens on. */
  InetSocketAddress address() {
    return server.getAddress();
  }

  int port() {
    return server.getAddress().getPort();
  }

  @Override
  public void close() {
    server.stop(0);
    ((ExecutorService) server.getExecutor()).shutdownNow();
  }
}
