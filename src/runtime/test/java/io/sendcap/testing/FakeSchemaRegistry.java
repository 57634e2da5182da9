package io.sendcap.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import org.apache.avro.Schema;

/**
 * An in-process schema registry with the Confluent-compatible REST API, on the JDK's HTTP server
 * bound to a free loopback port: registration, lookup under a subject and schemas by id, with the
 * registry's error answers ({@code {"error_code": 40403, "message": "..."}}). It records every
 * request, can require HTTP Basic authentication, answer 503, or answer late.
 */
public final class FakeSchemaRegistry implements AutoCloseable {
  /** The content type of the registry's API. */
  public static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

  /** The first id the registry hands out: above 255, so that the id's bytes are not all zero. */
  public static final int FIRST_ID = 0x0101;

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern VERSIONS = Pattern.compile("/subjects/([^/]+)/versions");
  private static final Pattern SUBJECT = Pattern.compile("/subjects/([^/]+)");
  private static final Pattern BY_ID = Pattern.compile("/schemas/ids/(-?\\d+)");

  /** One request as the registry saw it. */
  public record Request(
      String method, String path, String contentType, String authorization, String body) {
    /** The method and path, such as {@code GET /schemas/ids/257}. */
    @Override
    public String toString() {
      return method + " " + path;
    }
  }

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final String prefix;
  private final Map<Integer, String> schemas = new LinkedHashMap<>();
  private final Map<String, List<Integer>> subjects = new LinkedHashMap<>();
  private final List<Request> requests = new CopyOnWriteArrayList<>();
  private volatile Optional<String> requiredUserInfo = Optional.empty();
  private volatile boolean unavailable;
  private volatile long delayMs;
  private volatile Canned canned;

  /** An answer given to every request instead of the registry's own. */
  private record Canned(int status, String contentType, byte[] body) {}

  private int nextId = FIRST_ID;

  /** Starts a registry serving its API at the root. */
  public FakeSchemaRegistry() throws IOException {
    this("");
  }

  /** Starts a registry serving its API under a path, such as {@code /apis/ccompat/v7}. */
  public FakeSchemaRegistry(String prefix) throws IOException {
    this(prefix, HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0));
  }

  /**
   * Starts a registry serving its API over TLS at the root.
   *
   * @param tls the server's certificate and key, and whom it trusts
   * @param clientAuth whether clients must present a certificate it trusts (mutual TLS)
   */
  public static FakeSchemaRegistry https(SSLContext tls, boolean clientAuth) throws IOException {
    HttpsServer server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.setHttpsConfigurator(
        new HttpsConfigurator(tls) {
          @Override
          public void configure(HttpsParameters params) {
            SSLParameters parameters = tls.getDefaultSSLParameters();
            parameters.setNeedClientAuth(clientAuth);
            params.setSSLParameters(parameters);
          }
        });
    return new FakeSchemaRegistry("", server);
  }

  private FakeSchemaRegistry(String prefix, HttpServer server) {
    this.prefix = prefix;
    this.server = server;
    server.createContext(prefix.isEmpty() ? "/" : prefix, this::handle);
    server.setExecutor(executor);
    server.start();
  }

  /** The registry's base URL, with its path. */
  public String url() {
    String scheme = server instanceof HttpsServer ? "https" : "http";
    return scheme + "://127.0.0.1:" + server.getAddress().getPort() + prefix;
  }

  /** Requires HTTP Basic authentication with these credentials from now on. */
  public void requireUserInfo(String userInfo) {
    requiredUserInfo = Optional.of(userInfo);
  }

  /** Answers every request with 503 while {@code true}. */
  public void unavailable(boolean unavailable) {
    this.unavailable = unavailable;
  }

  /**
   * Answers every request with this status and body from now on, as a registry behind a proxy, a
   * gateway or a misconfigured path may; null restores the registry's own answers.
   */
  public void answerAll(int status, String contentType, byte[] body) {
    this.canned = body == null ? null : new Canned(status, contentType, body);
  }

  /** Answers every request this much later. */
  public void delay(long millis) {
    this.delayMs = millis;
  }

  /**
   * Registers a schema under a subject as a campaign engine's serializer would, returning its id.
   */
  public synchronized int register(String subject, Schema schema) {
    return register(subject, schema.toString());
  }

  private synchronized int register(String subject, String text) {
    Schema parsed = new Schema.Parser().parse(text);
    Integer id = null;
    for (Map.Entry<Integer, String> e : schemas.entrySet()) {
      if (new Schema.Parser().parse(e.getValue()).equals(parsed)) {
        id = e.getKey();
      }
    }
    if (id == null) {
      id = nextId++;
      schemas.put(id, text);
    }
    List<Integer> versions = subjects.computeIfAbsent(subject, s -> new ArrayList<>());
    if (!versions.contains(id)) {
      versions.add(id);
    }
    return id;
  }

  /** The schema text registered under an id, if any. */
  public synchronized Optional<String> schema(int id) {
    return Optional.ofNullable(schemas.get(id));
  }

  /** The ids registered under a subject, oldest first. */
  public synchronized List<Integer> versions(String subject) {
    return List.copyOf(subjects.getOrDefault(subject, List.of()));
  }

  /** Every request so far, oldest first. */
  public List<Request> requests() {
    return List.copyOf(requests);
  }

  /** Forgets the requests so far. */
  public void clearRequests() {
    requests.clear();
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath().substring(prefix.length());
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String authorization = exchange.getRequestHeaders().getFirst("Authorization");
      requests.add(
          new Request(
              exchange.getRequestMethod(),
              URLDecoder.decode(path, StandardCharsets.UTF_8),
              exchange.getRequestHeaders().getFirst("Content-Type"),
              authorization,
              body));
      if (delayMs > 0) {
        Thread.sleep(delayMs);
      }
      if (unavailable) {
        error(exchange, 503, 50301, "Schema registry is unavailable");
        return;
      }
      Canned answer = canned;
      if (answer != null) {
        exchange.getResponseHeaders().set("Content-Type", answer.contentType());
        exchange.sendResponseHeaders(answer.status(), answer.body().length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(answer.body());
        }
        return;
      }
      if (requiredUserInfo.isPresent()
          && !("Basic "
                  + Base64.getEncoder()
                      .encodeToString(requiredUserInfo.get().getBytes(StandardCharsets.UTF_8)))
              .equals(authorization)) {
        error(exchange, 401, 401, "Unauthorized");
        return;
      }
      answer(exchange, exchange.getRequestMethod(), path, body);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private void answer(HttpExchange exchange, String method, String path, String body)
      throws IOException {
    Matcher m;
    if (method.equals("POST") && (m = VERSIONS.matcher(path)).matches()) {
      if (!CONTENT_TYPE.equals(exchange.getRequestHeaders().getFirst("Content-Type"))) {
        error(exchange, 415, 415, "Unsupported Media Type");
        return;
      }
      String subject = URLDecoder.decode(m.group(1), StandardCharsets.UTF_8);
      JsonNode request = JSON.readTree(body);
      int id = register(subject, request.path("schema").asText());
      ok(exchange, JSON.createObjectNode().put("id", id));
    } else if (method.equals("POST") && (m = SUBJECT.matcher(path)).matches()) {
      String subject = URLDecoder.decode(m.group(1), StandardCharsets.UTF_8);
      Schema wanted = new Schema.Parser().parse(JSON.readTree(body).path("schema").asText());
      synchronized (this) {
        List<Integer> versions = subjects.get(subject);
        if (versions == null) {
          error(exchange, 404, 40401, "Subject '" + subject + "' not found.");
          return;
        }
        for (int v = 0; v < versions.size(); v++) {
          String text = schemas.get(versions.get(v));
          if (new Schema.Parser().parse(text).equals(wanted)) {
            ok(
                exchange,
                JSON.createObjectNode()
                    .put("subject", subject)
                    .put("id", versions.get(v))
                    .put("version", v + 1)
                    .put("schema", text));
            return;
          }
        }
      }
      error(exchange, 404, 40403, "Schema not found");
    } else if (method.equals("GET") && (m = BY_ID.matcher(path)).matches()) {
      int id = Integer.parseInt(m.group(1));
      Optional<String> text = schema(id);
      if (text.isEmpty()) {
        error(exchange, 404, 40403, "Schema " + id + " not found");
        return;
      }
      ok(exchange, JSON.createObjectNode().put("schema", text.get()));
    } else {
      error(exchange, 404, 404, "HTTP 404 Not Found");
    }
  }

  private static void ok(HttpExchange exchange, ObjectNode body) throws IOException {
    send(exchange, 200, body);
  }

  private static void error(HttpExchange exchange, int status, int code, String message)
      throws IOException {
    send(exchange, status, JSON.createObjectNode().put("error_code", code).put("message", message));
  }

  private static void send(HttpExchange exchange, int status, ObjectNode body) throws IOException {
    byte[] bytes = body.toString().getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", CONTENT_TYPE);
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
