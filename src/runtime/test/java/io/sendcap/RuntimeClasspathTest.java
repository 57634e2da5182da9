package io.sendcap;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What is deployed is the runtime module and its dependencies (the container image copies exactly
 * those): no Kafka broker, no Scala, no embedded Redis, no peer limiter and none of the demo's or
 * benchmarks' code may come with it. The test classpath is the runtime's plus test libraries that
 * bring none of these, so a dependency that drags one in fails here.
 */
class RuntimeClasspathTest {

  @Test
  void theRuntimeCarriesNoBrokerScalaEmbeddedRedisPeerLimiterDemoOrBench() {
    List<String> absent =
        List.of(
            "kafka.Kafka", // the broker
            "kafka.server.KafkaRaftServer",
            "scala.Predef",
            "redis.embedded.RedisServer",
            "io.github.bucket4j.Bucket",
            "org.redisson.Redisson",
            "com.google.common.collect.ImmutableList",
            "io.sendcap.demo.Demo",
            "io.sendcap.embedded.EmbeddedKafka",
            "io.sendcap.bench.BenchCommand");
    assertThat(absent).filteredOn(RuntimeClasspathTest::loadable).isEmpty();
  }

  @Test
  void theRuntimeCarriesWhatItRunsWith() {
    assertThat(
            List.of(
                "org.apache.kafka.streams.KafkaStreams",
                "io.lettuce.core.RedisClient",
                "org.roaringbitmap.RoaringBitmap",
                "org.apache.avro.Schema",
                "io.sendcap.cli.Main"))
        .allMatch(RuntimeClasspathTest::loadable);
  }

  private static boolean loadable(String className) {
    try {
      Class.forName(className, false, RuntimeClasspathTest.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
