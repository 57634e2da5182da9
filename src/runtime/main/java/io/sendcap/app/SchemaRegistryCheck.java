package io.sendcap.app;

import io.sendcap.avro.Delivery;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import io.sendcap.serde.ConfluentAvroSerde;
import io.sendcap.serde.SchemaRegistryClient;
import io.sendcap.serde.SchemaRegistrySettings;
import io.sendcap.serde.SchemaRegistryUnavailableException;
import org.apache.kafka.common.errors.SerializationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The start-up check of the schema registry under {@code avro.serde=confluent}: the registry
 * answers, and the subjects of the outputs ({@code <topic>-value} of the deliveries and the
 * suppressed topic) hold sendcap's schemas, registered now when {@code auto.register.schemas=true}.
 */
final class SchemaRegistryCheck {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaRegistryCheck.class);

  private SchemaRegistryCheck() {}

  /**
   * Checks the registry, if {@code avro.serde=confluent}; does nothing otherwise.
   *
   * @throws SendcapApp.StartupException in one line naming {@code schema.registry.url} if the
   *     registry cannot be reached, or the subject and the URL if a schema cannot be registered or
   *     is not registered
   */
  static void require(SendcapConfig config) {
    if (!SendcapConfig.CONFLUENT.equals(config.avroSerde())) {
      return;
    }
    SchemaRegistrySettings settings = SchemaRegistrySettings.from(config.schemaRegistry());
    SchemaRegistryClient registry = new SchemaRegistryClient(settings);
    SendcapConfig.Topics topics = config.topics();
    ConfluentAvroSerde<Delivery> deliveries =
        new ConfluentAvroSerde<>(Delivery.class, registry, settings.autoRegister(), false);
    ConfluentAvroSerde<Suppression> suppressions =
        new ConfluentAvroSerde<>(Suppression.class, registry, settings.autoRegister(), false);
    try {
      int delivery = deliveries.schemaId(topics.deliveries());
      int suppression = suppressions.schemaId(topics.suppressed());
      LOG.info(
          "schema registry {}: Delivery is schema id {} under {}, Suppression schema id {} under {}"
              + " ({})",
          registry.urls(),
          delivery,
          deliveries.subject(topics.deliveries()),
          suppression,
          suppressions.subject(topics.suppressed()),
          settings.autoRegister() ? "registered" : "found, auto.register.schemas=false");
    } catch (SchemaRegistryUnavailableException | SerializationException e) {
      throw new SendcapApp.StartupException(e.getMessage(), e);
    }
  }
}
