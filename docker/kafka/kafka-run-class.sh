#!/bin/bash
# Runs a class of the broker's classpath, as Apache Kafka's bin/kafka-run-class.sh: the broker with
# the console log at INFO, the tools with warnings only.
log4j="${KAFKA_LOG4J_OPTS:--Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties}"
exec java ${KAFKA_HEAP_OPTS:--Xmx256m} ${KAFKA_JVM_PERFORMANCE_OPTS:-} ${KAFKA_OPTS:-} $log4j \
  -cp '/opt/kafka/libs/*' "$@"
