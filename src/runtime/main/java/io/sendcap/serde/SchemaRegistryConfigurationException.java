package io.sendcap.serde;

/**
 * A schema registry that answers, but not as a registry configured for sendcap would: it refuses
 * sendcap's credentials (401) or their rights (403), or the configured URL is not the registry's
 * API (an answer without the registry's error format). A setting is wrong, not the record: like an
 * outage, the record waits (see {@code RegistryRetryingDeserializer}) and health says which setting
 * to fix.
 */
public final class SchemaRegistryConfigurationException extends SchemaRegistryUnavailableException {
  private final String setting;

  SchemaRegistryConfigurationException(String message, String setting) {
    super(message, null);
    this.setting = setting;
  }

  /** The setting to fix, such as {@code schema.registry.basic.auth.user.info}. */
  public String setting() {
    return setting;
  }
}
