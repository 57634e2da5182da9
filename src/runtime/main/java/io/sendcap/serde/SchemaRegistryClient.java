package io.sendcap.serde;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.avro.Schema;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InterruptException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client of a schema registry's Confluent-compatible REST API (Confluent Schema Registry, or
 * Apicurio Registry under {@code /apis/ccompat/v7}), for Avro schemas: registers a schema under a
 * subject, looks up whether a subject holds a schema, and fetches a schema by its id.
 *
 * <p>Answers are cached, ids by subject and schema and schemas by id, each up to a capacity (1,000
 * entries by default) beyond which the least recently used is dropped; a cached answer costs no
 * request. Ids are immutable in a registry, so entries never expire; an id the registry does not
 * know, or whose schema cannot be read, is remembered for {@link
 * SchemaRegistrySettings#MISSING_ID_CACHE_TTL}. Requests go to the configured URLs in order: one
 * that cannot be connected to, times out, throttles (408, 429), answers 5xx or refuses sendcap's
 * credentials (401, 403) is skipped for the next; any other answer is final. Answers are
 * classified: no URL answering is a {@link SchemaRegistryUnavailableException} (an outage: the
 * record waits), refused credentials or an answer that is not the registry's API a {@link
 * SchemaRegistryConfigurationException} (the record waits, health names the setting), and only an
 * unknown id or a schema that cannot be read a {@link SchemaRegistryException} (the record goes to
 * the dead-letter topic). A body is read up to {@link SchemaRegistrySettings#MAX_RESPONSE_BYTES}
 * and within the request timeout. Errors name the URL, the request and the registry's {@code
 * error_code} and {@code message}, never the credentials. Thread-safe.
 */
public final class SchemaRegistryClient {
  /** The content type of the registry's API, version 1. */
  public static final String CONTENT_TYPE = "application/vnd.schemaregistry.v1+json";

  /** How many ids and how many schemas are cached at most, by default. */
  public static final int DEFAULT_CACHE_CAPACITY = 1_000;

  private static final String ACCEPT =
      CONTENT_TYPE + ", application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5";
  private static final Logger LOG = LoggerFactory.getLogger(SchemaRegistryClient.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final SchemaRegistrySettings settings;
  private final HttpClient http;
  private final Optional<String> authorization;
  private final LruCache<SubjectSchema, Integer> ids;
  private final LruCache<Integer, Schema> schemas;
  private final AtomicLong requests = new AtomicLong();
  private final InstantSource clock;
  private final LruCache<Integer, Missing> missing;

  /** An id the registry does not know, or whose schema cannot be read, until a time. */
  private record Missing(SchemaRegistryException failure, long untilMillis) {}

  private record SubjectSchema(String subject, String schema) {}

  /** Creates a client with caches of {@link #DEFAULT_CACHE_CAPACITY} entries. */
  public SchemaRegistryClient(SchemaRegistrySettings settings) {
    this(settings, DEFAULT_CACHE_CAPACITY);
  }

  /**
   * Creates a client.
   *
   * @param settings where the registry is and how to authenticate
   * @param cacheCapacity how many ids, and how many schemas, are cached at most
   * @throws ConfigException if the key stores cannot be used
   */
  public SchemaRegistryClient(SchemaRegistrySettings settings, int cacheCapacity) {
    this(settings, cacheCapacity, InstantSource.system());
  }

  /**
   * Creates a client whose unknown ids expire by {@code clock}.
   *
   * @param settings where the registry is and how to authenticate
   * @param cacheCapacity how many ids, schemas and unknown ids are cached at most
   * @param clock the time unknown ids are remembered by
   * @throws ConfigException if the key stores cannot be used
   */
  public SchemaRegistryClient(
      SchemaRegistrySettings settings, int cacheCapacity, InstantSource clock) {
    this.settings = settings;
    this.clock = clock;
    this.missing = new LruCache<>(cacheCapacity);
    this.ids = new LruCache<>(cacheCapacity);
    this.schemas = new LruCache<>(cacheCapacity);
    HttpClient.Builder builder =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(settings.requestTimeout());
    if (settings.truststore().isPresent() || settings.keystore().isPresent()) {
      builder.sslContext(sslContext(settings));
    }
    this.http = builder.build();
    this.authorization =
        settings
            .userInfo()
            .map(
                u ->
                    "Basic "
                        + Base64.getEncoder().encodeToString(u.getBytes(StandardCharsets.UTF_8)));
  }

  private static SSLContext sslContext(SchemaRegistrySettings settings) {
    try {
      TrustManagerFactory trust =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      trust.init(
          settings.truststore().isPresent()
              ? SchemaRegistrySettings.load(settings.truststore().get())
              : null);
      KeyManagerFactory keys = null;
      if (settings.keystore().isPresent()) {
        SchemaRegistrySettings.Store store = settings.keystore().get();
        KeyStore keyStore = SchemaRegistrySettings.load(store);
        keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(keyStore, SchemaRegistrySettings.chars(store.keyPassword().or(store::password)));
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys == null ? null : keys.getKeyManagers(), trust.getTrustManagers(), null);
      return context;
    } catch (IOException | GeneralSecurityException e) {
      throw new ConfigException(
          "cannot use the key stores of "
              + SchemaRegistrySettings.TRUSTSTORE_LOCATION
              + "/"
              + SchemaRegistrySettings.KEYSTORE_LOCATION
              + ": "
              + e.getMessage());
    }
  }

  /** The settings the client was created with. */
  public SchemaRegistrySettings settings() {
    return settings;
  }

  /** The registry's URLs as configured, for messages. */
  public String urls() {
    return settings.urls().stream().map(URI::toString).toList().toString();
  }

  /** How many HTTP requests the client has sent, retries on other URLs included. */
  public long requests() {
    return requests.get();
  }

  /**
   * Registers a schema under a subject ({@code POST /subjects/{subject}/versions}), or finds it
   * there if it is registered already, and returns its id.
   *
   * @throws SchemaRegistryException if the registry refuses it (409: incompatible with the
   *     subject's compatibility rule; 401 or 403: not allowed)
   * @throws SchemaRegistryUnavailableException if no URL answers
   */
  public int register(String subject, Schema schema) {
    String text = schema.toString();
    SubjectSchema key = new SubjectSchema(subject, text);
    Integer cached = ids.get(key);
    if (cached != null) {
      return cached;
    }
    JsonNode answer = call("POST", "/subjects/" + encode(subject) + "/versions", body(text));
    int id = id(answer, "POST /subjects/" + subject + "/versions");
    LOG.info(
        "schema {} is id {} under subject {} in the schema registry",
        schema.getFullName(),
        id,
        subject);
    ids.put(key, id);
    schemas.put(id, schema);
    return id;
  }

  /**
   * Looks up whether a subject holds a schema ({@code POST /subjects/{subject}}), and returns its
   * id; empty when the registry answers that the subject or the schema under it does not exist.
   *
   * @throws SchemaRegistryException for any other error answer
   * @throws SchemaRegistryUnavailableException if no URL answers
   */
  public OptionalInt lookup(String subject, Schema schema) {
    String text = schema.toString();
    SubjectSchema key = new SubjectSchema(subject, text);
    Integer cached = ids.get(key);
    if (cached != null) {
      return OptionalInt.of(cached);
    }
    JsonNode answer;
    try {
      answer = call("POST", "/subjects/" + encode(subject), body(text));
    } catch (SchemaRegistryException e) {
      if (e.notFound()) {
        return OptionalInt.empty();
      }
      throw e;
    }
    int id = id(answer, "POST /subjects/" + subject);
    ids.put(key, id);
    schemas.put(id, schema);
    return OptionalInt.of(id);
  }

  /**
   * Fetches the schema of an id ({@code GET /schemas/ids/{id}}). An id the registry does not know,
   * or whose schema cannot be read, is remembered as such for {@link
   * SchemaRegistrySettings#MISSING_ID_CACHE_TTL}: asked again within it, the same failure costs no
   * request.
   *
   * @throws SchemaRegistryException if the registry does not know the id (404, error code 40403),
   *     or its answer is not a self-contained Avro schema (not JSON, no schema, larger than {@link
   *     SchemaRegistrySettings#MAX_RESPONSE_BYTES})
   * @throws SchemaRegistryConfigurationException if the registry refuses sendcap's credentials, or
   *     answers as no registry does (a wrong URL)
   * @throws SchemaRegistryUnavailableException if no URL answers
   */
  public Schema schemaById(int id) {
    Schema cached = schemas.get(id);
    if (cached != null) {
      return cached;
    }
    Missing known = missing.get(id);
    if (known != null && clock.millis() < known.untilMillis()) {
      throw known.failure();
    }
    Schema schema;
    try {
      schema = fetch(id);
    } catch (SchemaRegistryException e) {
      if (e.status() != 200 && !(e.status() == 404 && e.errorCode() / 100 == 404)) {
        throw new SchemaRegistryConfigurationException(
            e.getMessage()
                + ": not an answer of the schema registry's API; check "
                + SchemaRegistrySettings.URL,
            SchemaRegistrySettings.URL);
      }
      if (!settings.missingIdCacheTtl().isZero()) {
        missing.put(id, new Missing(e, clock.millis() + settings.missingIdCacheTtl().toMillis()));
      }
      throw e;
    }
    schemas.put(id, schema);
    return schema;
  }

  private Schema fetch(int id) {
    return schemaOf(id, call("GET", "/schemas/ids/" + id, null));
  }

  /**
   * The schema in the body of an answer to {@code GET /schemas/ids/{id}}, as {@link #schemaById}
   * reads it once the registry answered 200.
   *
   * @throws SchemaRegistryException if it holds no self-contained Avro schema
   */
  static Schema readSchemaAnswer(int id, String body) {
    JsonNode answer;
    try {
      answer = JSON.readTree(body);
    } catch (JsonProcessingException e) {
      answer = null;
    }
    if (answer == null || answer.isMissingNode()) {
      throw unusable("the answer to GET /schemas/ids/" + id + " is not JSON: " + abbreviate(body));
    }
    return schemaOf(id, answer);
  }

  private static Schema schemaOf(int id, JsonNode answer) {
    if (!answer.isObject()) {
      throw unusable(
          "the answer to GET /schemas/ids/"
              + id
              + " holds no schema: "
              + abbreviate(answer.toString()));
    }
    String type = answer.path("schemaType").asText("AVRO");
    if (!type.equals("AVRO")) {
      throw unusable("schema id " + id + " is a " + type + " schema, not Avro");
    }
    if (answer.path("references").size() > 0) {
      throw unusable(
          "schema id "
              + id
              + " refers to other schemas ("
              + abbreviate(answer.path("references").toString())
              + "); register it self-contained, with the types it uses inlined");
    }
    JsonNode text = answer.path("schema");
    if (!text.isTextual()) {
      throw unusable("the answer to GET /schemas/ids/" + id + " holds no schema");
    }
    try {
      return new Schema.Parser().parse(text.asText());
    } catch (RuntimeException | StackOverflowError e) {
      // SchemaParseException, and whatever else Avro's parser throws on text it was not made for
      throw unusable("schema id " + id + " is not a valid Avro schema: " + e.getMessage());
    }
  }

  private static SchemaRegistryException unusable(String what) {
    return new SchemaRegistryException(what, 200, 0);
  }

  private static String body(String schema) {
    return JSON.createObjectNode().put("schema", schema).toString();
  }

  private int id(JsonNode answer, String request) {
    JsonNode id = answer.path("id");
    if (!id.canConvertToInt()) {
      throw unusable(
          "the answer to " + request + " holds no schema id: " + abbreviate(answer.toString()));
    }
    return id.intValue();
  }

  private static String encode(String subject) {
    return URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20");
  }

  /**
   * Sends a request to each URL in turn until one answers with anything but a server error,
   * throttling (408, 429) or a refusal of sendcap's credentials (401, 403), and returns its JSON
   * body. An answer is read up to {@link SchemaRegistrySettings#maxResponseBytes()}, and within
   * {@link SchemaRegistrySettings#requestTimeout()} in all, its body included.
   */
  private JsonNode call(String method, String path, String body) {
    List<String> failures = new ArrayList<>();
    String refused = null;
    for (URI base : settings.urls()) {
      String url = base.toString().replaceAll("/+$", "");
      HttpRequest.Builder request =
          HttpRequest.newBuilder(URI.create(url + path))
              .timeout(settings.requestTimeout())
              .header("Accept", ACCEPT);
      authorization.ifPresent(a -> request.header("Authorization", a));
      if (body == null) {
        request.GET();
      } else {
        request
            .header("Content-Type", CONTENT_TYPE)
            .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
      }
      HttpResponse<LimitedBody.Body> response;
      try {
        requests.incrementAndGet();
        response = send(request.build());
      } catch (IOException e) {
        failures.add(url + ": " + describe(e));
        continue;
      }
      int status = response.statusCode();
      LimitedBody.Body answer = response.body();
      if (status >= 200 && status < 300) {
        if (answer.truncated()) {
          throw new SchemaRegistryException(
              "the schema registry at "
                  + url
                  + " answered "
                  + method
                  + " "
                  + path
                  + " with more than "
                  + SchemaRegistrySettings.MAX_RESPONSE_BYTES
                  + "="
                  + settings.maxResponseBytes()
                  + " bytes",
              status,
              0);
        }
        try {
          JsonNode json = JSON.readTree(answer.text());
          if (json != null && !json.isMissingNode()) {
            return json;
          }
        } catch (JsonProcessingException e) {
          // reported below
        }
        throw new SchemaRegistryException(
            "the schema registry at "
                + url
                + " answered "
                + method
                + " "
                + path
                + " with a body that is not JSON: "
                + abbreviate(answer.text()),
            status,
            0);
      }
      String error = error(answer.text());
      String failure = url + ": answered " + status + " to " + method + " " + path + ": " + error;
      if (status >= 500 || status == 408 || status == 429) {
        failures.add(failure);
        continue;
      }
      if (status == 401 || status == 403) {
        failures.add(failure);
        refused = refused == null ? failure : refused;
        continue;
      }
      throw new SchemaRegistryException(
          "the schema registry at "
              + url
              + " answered "
              + status
              + " to "
              + method
              + " "
              + path
              + ": "
              + error,
          status,
          errorCode(status, answer.text()));
    }
    if (refused != null) {
      throw new SchemaRegistryConfigurationException(
          "the schema registry refuses sendcap ("
              + refused
              + "): check the credentials of "
              + SchemaRegistrySettings.USER_INFO
              + " (or the client certificate of "
              + SchemaRegistrySettings.KEYSTORE_LOCATION
              + ") and their rights in the registry",
          SchemaRegistrySettings.USER_INFO);
    }
    LOG.debug("no schema registry URL answered: {}", failures);
    throw new SchemaRegistryUnavailableException(
        "cannot reach the schema registry ("
            + SchemaRegistrySettings.URL
            + "): "
            + String.join("; ", failures),
        null);
  }

  /** Sends a request and reads its answer, both within the request timeout. */
  private HttpResponse<LimitedBody.Body> send(HttpRequest request) throws IOException {
    CompletableFuture<HttpResponse<LimitedBody.Body>> answer =
        http.sendAsync(request, info -> new LimitedBody(settings.maxResponseBytes()));
    try {
      return answer.get(settings.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      answer.cancel(true);
      Thread.currentThread().interrupt();
      throw new InterruptException(e);
    } catch (TimeoutException e) {
      answer.cancel(true);
      throw new HttpTimeoutException("no answer within the request timeout");
    } catch (ExecutionException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException(e.getCause());
    }
  }

  /** The registry's {@code error_code} and {@code message}, or the start of a body without them. */
  static String error(String text) {
    try {
      JsonNode body = JSON.readTree(text);
      if (body != null && body.has("error_code")) {
        return "error_code "
            + abbreviate(body.path("error_code").asText())
            + ", "
            + abbreviate(body.path("message").asText("(no message)"));
      }
    } catch (JsonProcessingException e) {
      // not the registry's error format
    }
    String stripped = text.strip();
    return stripped.isEmpty() ? "(no body)" : abbreviate(stripped);
  }

  /** The registry's {@code error_code}, or the status when the body has none. */
  static int errorCode(int status, String text) {
    try {
      JsonNode body = JSON.readTree(text);
      if (body != null && body.path("error_code").canConvertToInt()) {
        return body.path("error_code").intValue();
      }
    } catch (JsonProcessingException e) {
      // not the registry's error format
    }
    return status;
  }

  private static String abbreviate(String text) {
    String line = text.replaceAll("\\s+", " ");
    return line.length() <= 200 ? line : line.substring(0, 200) + "...";
  }

  /**
   * Why a request failed, in a few words: the JDK's exceptions often have no message of their own.
   */
  private String describe(IOException e) {
    if (e instanceof HttpTimeoutException) {
      return "no answer within "
          + settings.requestTimeout().toMillis()
          + " ms ("
          + SchemaRegistrySettings.REQUEST_TIMEOUT
          + ")";
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof UnresolvedAddressException || t instanceof UnknownHostException) {
        return "cannot connect: unknown host";
      }
    }
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t.getMessage() != null && !t.getMessage().isBlank()) {
        return (e instanceof ConnectException ? "cannot connect: " : "")
            + t.getClass().getSimpleName()
            + ": "
            + t.getMessage();
      }
    }
    return e instanceof ConnectException
        ? "cannot connect (connection refused)"
        : e.getClass().getSimpleName();
  }
}
