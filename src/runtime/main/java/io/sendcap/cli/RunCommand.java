package io.sendcap.cli;

import io.sendcap.app.SendcapApp;
import io.sendcap.config.SendcapConfig;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/** {@code sendcap run}: the production application against a given broker and Redis. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    description = "Runs sendcap against the Kafka and Redis named in the configuration file.")
final class RunCommand implements Callable<Integer> {
  @Mixin ConfigOptions options;

  @Override
  public Integer call() throws InterruptedException {
    SendcapConfig settings = options.loadWithPolicies();
    SendcapApp app = SendcapApp.start(settings);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  app.close();
                  stopped.countDown();
                },
                "sendcap-shutdown"));
    stopped.await();
    return 0;
  }
}
