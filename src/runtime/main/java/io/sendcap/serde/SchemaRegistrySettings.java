package io.sendcap.serde;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.config.ConfigException;

/**
 * How to reach a schema registry with the Confluent-compatible REST API, and whether to register
 * sendcap's schemas in it: the settings {@code schema.registry.*} and {@code
 * auto.register.schemas}, named as Confluent's serializers name them.
 *
 * <p>{@link #toString()} hides the password of the user info and of the key stores.
 *
 * @param urls the registry's base URLs, tried in order (a path such as Apicurio Registry's {@code
 *     /apis/ccompat/v7} is kept)
 * @param userInfo {@code user:password} for HTTP Basic authentication, if any
 * @param truststore the certificates to trust for {@code https} URLs, if not the JDK's
 * @param keystore the client certificate and key for mutual TLS, if any
 * @param requestTimeout how long one HTTP request may take, connection included
 * @param autoRegister whether a serializer registers its schema under its subject ({@code true}),
 *     or requires it to be registered already ({@code false}, for registries that only their owners
 *     write to)
 * @param maxResponseBytes the most bytes of an answer's body that are read; a longer schema answer
 *     is a schema that cannot be read
 * @param missingIdCacheTtl how long an id the registry does not know, or whose schema cannot be
 *     read, is remembered as such; zero: not at all
 */
public record SchemaRegistrySettings(
    List<URI> urls,
    Optional<String> userInfo,
    Optional<Store> truststore,
    Optional<Store> keystore,
    Duration requestTimeout,
    boolean autoRegister,
    int maxResponseBytes,
    Duration missingIdCacheTtl) {

  /** One or more comma-separated base URLs of the registry; required. */
  public static final String URL = "schema.registry.url";

  /** {@code user:password}, sent as HTTP Basic authentication. */
  public static final String USER_INFO = "schema.registry.basic.auth.user.info";

  /** A key store file (PKCS12 or JKS) of the certificates to trust. */
  public static final String TRUSTSTORE_LOCATION = "schema.registry.ssl.truststore.location";

  /** The password of {@link #TRUSTSTORE_LOCATION}. */
  public static final String TRUSTSTORE_PASSWORD = "schema.registry.ssl.truststore.password";

  /** A key store file (PKCS12 or JKS) of the client's certificate and key, for mutual TLS. */
  public static final String KEYSTORE_LOCATION = "schema.registry.ssl.keystore.location";

  /** The password of {@link #KEYSTORE_LOCATION}. */
  public static final String KEYSTORE_PASSWORD = "schema.registry.ssl.keystore.password";

  /** The password of the key in {@link #KEYSTORE_LOCATION}; the store's password when not set. */
  public static final String KEY_PASSWORD = "schema.registry.ssl.key.password";

  /** How long one request to the registry may take, in milliseconds. */
  public static final String REQUEST_TIMEOUT = "schema.registry.request.timeout.ms";

  /** Whether serializers register their schema ({@code true}, the default) or look it up. */
  public static final String AUTO_REGISTER = "auto.register.schemas";

  /** The most bytes of a registry's answer that are read. */
  public static final String MAX_RESPONSE_BYTES = "schema.registry.max.response.bytes";

  /** How long an unknown or unreadable schema id is remembered, in milliseconds. */
  public static final String MISSING_ID_CACHE_TTL = "schema.registry.missing.id.cache.ttl.ms";

  /** Every key read here. */
  public static final Set<String> KEYS =
      Set.of(
          URL,
          USER_INFO,
          TRUSTSTORE_LOCATION,
          TRUSTSTORE_PASSWORD,
          KEYSTORE_LOCATION,
          KEYSTORE_PASSWORD,
          KEY_PASSWORD,
          REQUEST_TIMEOUT,
          AUTO_REGISTER,
          MAX_RESPONSE_BYTES,
          MISSING_ID_CACHE_TTL);

  /** The default of {@link #REQUEST_TIMEOUT}. */
  public static final int DEFAULT_REQUEST_TIMEOUT_MS = 5_000;

  /** The default of {@link #MAX_RESPONSE_BYTES}: 4 MiB. */
  public static final int DEFAULT_MAX_RESPONSE_BYTES = 4 << 20;

  /** The least of {@link #MAX_RESPONSE_BYTES}. */
  public static final int MIN_MAX_RESPONSE_BYTES = 1_024;

  /** The greatest of {@link #MAX_RESPONSE_BYTES}: 256 MiB. */
  public static final int MAX_MAX_RESPONSE_BYTES = 256 << 20;

  /** The default of {@link #MISSING_ID_CACHE_TTL}: a minute. */
  public static final int DEFAULT_MISSING_ID_CACHE_TTL_MS = 60_000;

  /** The greatest of {@link #MISSING_ID_CACHE_TTL}: a day. */
  public static final int MAX_MISSING_ID_CACHE_TTL_MS = 86_400_000;

  /**
   * A key store file and its passwords.
   *
   * @param location the file, PKCS12 or JKS
   * @param password the store's password, if any
   * @param keyPassword the password of its private key, if it differs from the store's
   */
  public record Store(Path location, Optional<String> password, Optional<String> keyPassword) {
    /** Names the file only. */
    @Override
    public String toString() {
      return location.toString();
    }
  }

  /** Creates the settings; the URL list is copied. */
  public SchemaRegistrySettings {
    urls = List.copyOf(urls);
    if (urls.isEmpty()) {
      throw new IllegalArgumentException(URL + " names no URL");
    }
  }

  /** Settings for the given URLs, without authentication, TLS settings or a timeout of its own. */
  public static SchemaRegistrySettings of(String... urls) {
    return new SchemaRegistrySettings(
        List.of(urls).stream().map(URI::create).toList(),
        Optional.empty(),
        Optional.empty(),
        Optional.empty(),
        Duration.ofMillis(DEFAULT_REQUEST_TIMEOUT_MS),
        true,
        DEFAULT_MAX_RESPONSE_BYTES,
        Duration.ofMillis(DEFAULT_MISSING_ID_CACHE_TTL_MS));
  }

  /**
   * Reads the settings from Kafka-style configs, as a serde's {@code configure} receives them.
   *
   * @throws ConfigException naming every invalid key, its value (secrets hidden) and what is
   *     allowed
   */
  public static SchemaRegistrySettings from(Map<String, ?> configs) {
    List<String> problems = new ArrayList<>();
    SchemaRegistrySettings settings = parse(configs, problems);
    if (!problems.isEmpty()) {
      throw new ConfigException(String.join("; ", problems));
    }
    return settings;
  }

  /**
   * Every problem of the settings in {@code configs}, each naming the key, the value (secrets
   * hidden) and what is allowed; empty when they are valid.
   */
  public static List<String> problems(Map<String, ?> configs) {
    List<String> problems = new ArrayList<>();
    parse(configs, problems);
    return problems;
  }

  private static SchemaRegistrySettings parse(Map<String, ?> configs, List<String> problems) {
    List<URI> urls = new ArrayList<>();
    String urlValue = value(configs, URL);
    if (urlValue == null) {
      problems.add(
          URL
              + "=(missing) is invalid: one or more comma-separated http:// or https:// URLs of a"
              + " schema registry with the Confluent-compatible API, required by"
              + " avro.serde=confluent");
    } else {
      for (String part : urlValue.split(",")) {
        String url = part.trim();
        Optional<URI> parsed = url(url);
        if (parsed.isPresent()) {
          urls.add(parsed.get());
        } else {
          problems.add(
              invalid(
                  URL,
                  withoutUserInfo(url),
                  "http://host:port or https://host:port, optionally with a path, comma-separated;"
                      + " credentials go in "
                      + USER_INFO));
        }
      }
    }
    Optional<String> userInfo = Optional.ofNullable(value(configs, USER_INFO));
    if (userInfo.isPresent() && userInfo.get().indexOf(':') < 1) {
      problems.add(invalid(USER_INFO, "[hidden]", "user:password"));
    }
    Optional<Store> truststore =
        store(configs, TRUSTSTORE_LOCATION, TRUSTSTORE_PASSWORD, null, problems);
    Optional<Store> keystore =
        store(configs, KEYSTORE_LOCATION, KEYSTORE_PASSWORD, KEY_PASSWORD, problems);
    Duration timeout = Duration.ofMillis(DEFAULT_REQUEST_TIMEOUT_MS);
    String timeoutValue = value(configs, REQUEST_TIMEOUT);
    if (timeoutValue != null) {
      try {
        timeout = Duration.ofMillis(Integer.parseInt(timeoutValue));
      } catch (NumberFormatException e) {
        timeout = Duration.ZERO;
      }
      if (timeout.isZero() || timeout.isNegative()) {
        problems.add(invalid(REQUEST_TIMEOUT, timeoutValue, "a whole number from 1 to 2147483647"));
        timeout = Duration.ofMillis(DEFAULT_REQUEST_TIMEOUT_MS);
      }
    }
    boolean autoRegister = true;
    String autoRegisterValue = value(configs, AUTO_REGISTER);
    if (autoRegisterValue != null) {
      if (autoRegisterValue.equals("true") || autoRegisterValue.equals("false")) {
        autoRegister = Boolean.parseBoolean(autoRegisterValue);
      } else {
        problems.add(invalid(AUTO_REGISTER, autoRegisterValue, "true or false"));
      }
    }
    int maxResponseBytes =
        integer(
            configs,
            MAX_RESPONSE_BYTES,
            DEFAULT_MAX_RESPONSE_BYTES,
            MIN_MAX_RESPONSE_BYTES,
            MAX_MAX_RESPONSE_BYTES,
            "",
            problems);
    int missingTtl =
        integer(
            configs,
            MISSING_ID_CACHE_TTL,
            DEFAULT_MISSING_ID_CACHE_TTL_MS,
            0,
            MAX_MISSING_ID_CACHE_TTL_MS,
            " (not remembered)",
            problems);
    return problems.isEmpty()
        ? new SchemaRegistrySettings(
            urls,
            userInfo,
            truststore,
            keystore,
            timeout,
            autoRegister,
            maxResponseBytes,
            Duration.ofMillis(missingTtl))
        : null;
  }

  /** A whole number from {@code min} to {@code max}; its default when not set. */
  private static int integer(
      Map<String, ?> configs,
      String key,
      int defaultValue,
      int min,
      int max,
      String minNote,
      List<String> problems) {
    String value = value(configs, key);
    if (value == null) {
      return defaultValue;
    }
    try {
      int n = Integer.parseInt(value);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    problems.add(invalid(key, value, "a whole number from " + min + minNote + " to " + max));
    return defaultValue;
  }

  /** The trimmed value of a key; null when absent or blank. */
  private static String value(Map<String, ?> configs, String key) {
    Object value = configs.get(key);
    if (value == null) {
      return null;
    }
    String text = String.valueOf(value).trim();
    return text.isEmpty() ? null : text;
  }

  private static Optional<URI> url(String url) {
    try {
      URI uri = new URI(url);
      boolean http = "http".equals(uri.getScheme()) || "https".equals(uri.getScheme());
      if (http
          && uri.getHost() != null
          && uri.getRawUserInfo() == null
          && uri.getRawQuery() == null
          && uri.getRawFragment() == null) {
        return Optional.of(uri);
      }
    } catch (URISyntaxException e) {
      // reported by the caller
    }
    return Optional.empty();
  }

  private static Optional<Store> store(
      Map<String, ?> configs,
      String locationKey,
      String passwordKey,
      String keyPasswordKey,
      List<String> problems) {
    String location = value(configs, locationKey);
    Optional<String> password = Optional.ofNullable(value(configs, passwordKey));
    Optional<String> keyPassword =
        keyPasswordKey == null
            ? Optional.empty()
            : Optional.ofNullable(value(configs, keyPasswordKey));
    if (location == null) {
      return Optional.empty();
    }
    Path file = Path.of(location);
    if (!Files.isReadable(file)) {
      problems.add(invalid(locationKey, location, "a readable key store file (PKCS12 or JKS)"));
      return Optional.empty();
    }
    Store store = new Store(file, password, keyPassword);
    try {
      load(store);
    } catch (IOException | GeneralSecurityException e) {
      problems.add(
          invalid(
              locationKey,
              location,
              "a PKCS12 or JKS key store that opens with " + passwordKey + ": " + e.getMessage()));
      return Optional.empty();
    }
    return Optional.of(store);
  }

  /** Opens a key store file, whichever of PKCS12 and JKS it is. */
  static KeyStore load(Store store) throws IOException, GeneralSecurityException {
    return KeyStore.getInstance(store.location().toFile(), chars(store.password()));
  }

  static char[] chars(Optional<String> password) {
    return password.map(String::toCharArray).orElse(null);
  }

  private static String invalid(String key, String value, String allowed) {
    return key + "=\"" + value + "\" is invalid: " + allowed;
  }

  /** A URL with its user info, if any, replaced by {@code [hidden]}. */
  static String withoutUserInfo(String url) {
    return url.replaceAll("(\\w+://)[^@/,]*@", "$1[hidden]@");
  }

  /** The settings with every password hidden. */
  @Override
  public String toString() {
    return "SchemaRegistrySettings[urls="
        + urls
        + ", userInfo="
        + userInfo
            .map(u -> u.substring(0, Math.max(0, u.indexOf(':'))) + ":[hidden]")
            .orElse("none")
        + ", truststore="
        + truststore.map(Store::toString).orElse("none")
        + ", keystore="
        + keystore.map(Store::toString).orElse("none")
        + ", requestTimeout="
        + requestTimeout.toMillis()
        + " ms, autoRegister="
        + autoRegister
        + ", maxResponseBytes="
        + maxResponseBytes
        + ", missingIdCacheTtl="
        + missingIdCacheTtl.toMillis()
        + " ms]";
  }
}
