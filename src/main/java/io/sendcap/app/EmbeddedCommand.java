package io.sendcap.app;

import io.sendcap.config.SendcapConfig;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.embedded.EmbeddedRedis;
import java.io.PrintWriter;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sendcap embedded}: a Kafka broker and Redis for local development, until stopped. */
@Command(
    name = "embedded",
    mixinStandardHelpOptions = true,
    description =
        "Starts an embedded Kafka broker (KRaft) and Redis with sendcap's default topics and"
            + " prints their addresses; runs until stopped (Ctrl-C).")
final class EmbeddedCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(
      names = "--partitions",
      description = "Partitions of each topic (default: ${DEFAULT-VALUE}).")
  int partitions = 4;

  @Override
  public Integer call() throws InterruptedException {
    EmbeddedRedis redis = EmbeddedRedis.start();
    EmbeddedKafka kafka = EmbeddedKafka.start(null);
    SendcapConfig.Topics t = SendcapConfig.from(new Properties(), "defaults").topics();
    KafkaTopics.create(
        kafka.bootstrapServers(),
        partitions,
        List.of(t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  kafka.close();
                  redis.close();
                  stopped.countDown();
                },
                "embedded-shutdown"));
    PrintWriter out = spec.commandLine().getOut();
    out.println("bootstrap.servers=" + kafka.bootstrapServers());
    out.println("cap.redis.uri=" + redis.uri());
    out.println(
        "topics: " + String.join(", ", t.input(), t.deliveries(), t.suppressed(), t.deadLetters()));
    out.println("Publish the segments the policies name, once, with:");
    out.printf(
        "  for s in new-users active dormant; do bin/sendcap segments publish --set"
            + " bootstrap.servers=%s --name $s --ids config/segments/$s.ids; done%n",
        kafka.bootstrapServers());
    out.println("Run sendcap against them with:");
    out.printf(
        "  bin/sendcap run --config config/sendcap.properties --set bootstrap.servers=%s"
            + " --set cap.redis.uri=%s%n",
        kafka.bootstrapServers(), redis.uri());
    out.println("Press Ctrl-C to stop.");
    out.flush();
    stopped.await();
    return 0;
  }
}
