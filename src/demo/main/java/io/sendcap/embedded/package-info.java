/**
 * Real Kafka, Redis and Schema Registry servers started from this JVM, for {@code demo}, {@code
 * embedded} and integration tests on machines without Docker: an in-process KRaft broker, {@code
 * redis-server} child processes and an Apicurio Registry child process.
 */
package io.sendcap.embedded;
