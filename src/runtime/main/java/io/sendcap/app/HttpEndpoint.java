package io.sendcap.app;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operators' HTTP endpoint: {@code /metrics} in the Prometheus text format, {@code
 * /health/live} and {@code /health/ready}, each answering 200 when up and 503 when not, with a
 * one-line JSON body saying why.
 *
 * <p>Requests are served by {@link DeadlineExecutor#THREADS} threads, so a slow check or scrape
 * does not hold the others up. A client that opens a connection and sends nothing holds no thread
 * (the JDK's server reads a request only once bytes arrive); one that sends part of a request and
 * stalls, or does not read its answer, loses its connection after the request timeout.
 */
final class HttpEndpoint implements AutoCloseable {
  /** How long a request may take, from its first bytes to the last byte of its answer. */
  static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

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
  private final DeadlineExecutor executor;

  private HttpEndpoint(HttpServer server, DeadlineExecutor executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Starts the endpoint on {@code port} (0: a free port) of the interface {@code host} ({@code
   * 0.0.0.0}: every interface), with requests timing out after {@link #REQUEST_TIMEOUT}.
   *
   * @throws UncheckedIOException if the address cannot be bound
   */
  static HttpEndpoint start(
      String host,
      int port,
      Supplier<String> metrics,
      Supplier<Health> live,
      Supplier<Health> ready) {
    return start(host, port, metrics, live, ready, REQUEST_TIMEOUT);
  }

  /**
   * Starts the endpoint as {@link #start(String, int, Supplier, Supplier, Supplier)} does, with
   * requests timing out after {@code requestTimeout}.
   */
  static HttpEndpoint start(
      String host,
      int port,
      Supplier<String> metrics,
      Supplier<Health> live,
      Supplier<Health> ready,
      Duration requestTimeout) {
    HttpServer server;
    try {
      server = HttpServer.create(new InetSocketAddress(host, port), 0);
    } catch (IOException e) {
      throw new UncheckedIOException(
          "cannot serve metrics on " + host + ":" + port + " (http.host, http.port)", e);
    }
    DeadlineExecutor executor = new DeadlineExecutor(requestTimeout);
    server.setExecutor(executor);
    server.createContext(
        "/metrics", e -> answer(e, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get()));
    server.createContext("/health/live", e -> health(e, live.get()));
    server.createContext("/health/ready", e -> health(e, ready.get()));
    server.start();
    LOG.info(
        "metrics on http://{}:{}/metrics, health on /health/live and /health/ready",
        host.equals("0.0.0.0") ? "localhost" : host,
        server.getAddress().getPort());
    return new HttpEndpoint(server, executor);
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
    executor.close();
  }
}
