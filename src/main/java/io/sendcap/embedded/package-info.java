/**
 * Real Kafka and Redis servers started from this JVM, for {@code demo} and integration tests on
 * machines without Docker: an in-process KRaft broker and {@code redis-server} child processes.
 */
package io.sendcap.embedded;
