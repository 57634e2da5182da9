package io.sendcap.testing;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * An HTTP proxy in front of a real schema registry, on the JDK's HTTP server bound to a free port
 * of 127.0.0.1, that forwards every request except the lookups of chosen schema ids ({@code GET
 * .../schemas/ids/{id}}), which it answers as a registry in trouble does: 429 for the first few, a
 * body that is not JSON with status 200, or 401 until told to let them through.
 */
public final class RegistryProxy implements AutoCloseable {
  private static final Pattern BY_ID = Pattern.compile(".*/schemas/ids/(\\d+)");
  private static final List<String> FORWARDED_HEADERS =
      List.of("Accept", "Content-Type", "Authorization");
  private static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final HttpClient http =
      HttpClient.newBuilder()
          .proxy(HttpClient.Builder.NO_PROXY)
          .connectTimeout(Duration.ofSeconds(5))
          .build();
  private final URI target;
  private final Map<Integer, Integer> throttled = new ConcurrentHashMap<>();
  private final Set<Integer> garbled = ConcurrentHashMap.newKeySet();
  private final Set<Integer> refused = ConcurrentHashMap.newKeySet();
  private final Map<Integer, AtomicInteger> lookups = new ConcurrentHashMap<>();

  private RegistryProxy(URI target) throws IOException {
    this.target = target;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setExecutor(executor);
    server.createContext("/", this::handle);
    server.start();
  }

  /**
   * Starts a proxy of the registry whose API is at {@code registryUrl} (such as {@code
   * http://127.0.0.1:8081/apis/ccompat/v7}).
   */
  public static RegistryProxy start(String registryUrl) throws IOException {
    return new RegistryProxy(URI.create(registryUrl));
  }

  /** The registry's API through the proxy: the registry's URL on the proxy's port. */
  public String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort() + target.getRawPath();
  }

  /** Answers the first {@code times} lookups of schema {@code id} with 429 Too Many Requests. */
  public void throttle(int id, int times) {
    throttled.put(id, times);
  }

  /** Answers every lookup of schema {@code id} with status 200 and a body that is not JSON. */
  public void garble(int id) {
    garbled.add(id);
  }

  /** Answers the lookups of schema {@code id} with 401 Unauthorized until {@link #admit}. */
  public void refuse(int id) {
    refused.add(id);
  }

  /** Forwards the lookups of schema {@code id} again after {@link #refuse}. */
  public void admit(int id) {
    refused.remove(id);
  }

  /** How many times schema {@code id} has been looked up through the proxy, answered or not. */
  public int lookups(int id) {
    AtomicInteger n = lookups.get(id);
    return n == null ? 0 : n.get();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      Matcher byId = BY_ID.matcher(exchange.getRequestURI().getRawPath());
      if (exchange.getRequestMethod().equals("GET") && byId.matches()) {
        int id = Integer.parseInt(byId.group(1));
        int lookup = lookups.computeIfAbsent(id, i -> new AtomicInteger()).incrementAndGet();
        if (lookup <= throttled.getOrDefault(id, 0)) {
          exchange.getResponseHeaders().add("Retry-After", "1");
          respond(exchange, 429, "{\"error_code\":429,\"message\":\"Too Many Requests\"}");
          return;
        }
        if (garbled.contains(id)) {
          respond(exchange, 200, "<html><body>Registry maintenance: back soon</body></html>");
          return;
        }
        if (refused.contains(id)) {
          exchange.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"registry\"");
          respond(exchange, 401, "{\"error_code\":401,\"message\":\"Unauthorized\"}");
          return;
        }
      }
      forward(exchange);
    }
  }

  private void forward(HttpExchange exchange) throws IOException {
    URI uri = exchange.getRequestURI();
    String query = uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery();
    byte[] body = exchange.getRequestBody().readAllBytes();
    HttpRequest.Builder request =
        HttpRequest.newBuilder(target.resolve(uri.getRawPath() + query))
            .timeout(Duration.ofSeconds(10))
            .method(
                exchange.getRequestMethod(),
                body.length == 0
                    ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofByteArray(body));
    for (String name : FORWARDED_HEADERS) {
      String value = exchange.getRequestHeaders().getFirst(name);
      if (value != null) {
        request.header(name, value);
      }
    }
    HttpResponse<byte[]> answer;
    try {
      answer = http.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      respond(exchange, 502, "{\"error_code\":502,\"message\":\"proxy interrupted\"}");
      return;
    } catch (IOException e) {
      respond(exchange, 502, "{\"error_code\":502,\"message\":\"" + e.getClass() + "\"}");
      return;
    }
    answer
        .headers()
        .firstValue("Content-Type")
        .ifPresent(t -> exchange.getResponseHeaders().add("Content-Type", t));
    send(exchange, answer.statusCode(), answer.body());
  }

  private static void respond(HttpExchange exchange, int status, String body) throws IOException {
    exchange.getResponseHeaders().add("Content-Type", CONTENT_TYPE);
    send(exchange, status, body.getBytes(StandardCharsets.UTF_8));
  }

  private static void send(HttpExchange exchange, int status, byte[] body) throws IOException {
    exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(body);
    }
  }

  /** Stops the proxy at once; the registry behind it goes on. */
  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
