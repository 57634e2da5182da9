package io.sendcap.topology;

import io.sendcap.serde.SchemaRegistryUnavailableException;

/**
 * Where a stream thread waits while the schema registry cannot be reached for a send it reads
 * ({@link RegistryRetryingDeserializer}): it reports each failed try and is told how long to wait
 * before the next, and reports the registry's answer once it comes.
 *
 * <p>The application's implementation logs the outage once at its start and once at its end, counts
 * it in a meter, and ends every wait when the application stops.
 */
public interface RegistryOutage {
  /** Never waits: the failure is thrown at once, for tests of the topology alone. */
  RegistryOutage NONE =
      new RegistryOutage() {
        @Override
        public void await(SchemaRegistryUnavailableException cause, int failures) {
          throw cause;
        }

        @Override
        public void answered() {}
      };

  /**
   * Reports that the registry could not be reached to read a record, and waits before the record is
   * tried again.
   *
   * @param cause why the registry could not be reached: every URL tried and how each failed
   * @param failures how many tries in a row have failed for this record, from 1
   * @throws SchemaRegistryUnavailableException {@code cause}, to give the record up: when the
   *     application stops, the record is read again from the last commit by its next run
   */
  void await(SchemaRegistryUnavailableException cause, int failures);

  /** Reports that the registry answered a record that had waited for it. */
  void answered();
}
