package io.sendcap.app;

import io.sendcap.config.SendcapConfig;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code sendcap run}: the production application against a given broker and Redis. */
@Command(
    name = "run",
    mixinStandardHelpOptions = true,
    description = "Runs sendcap against the Kafka and Redis named in the configuration file.")
final class RunCommand implements Callable<Integer> {
  @Option(
      names = "--config",
      required = true,
      description = "The configuration file (see config/sendcap.properties).")
  Path config;

  @Option(
      names = "--set",
      paramLabel = "KEY=VALUE",
      description = "Overrides a key of the configuration file; repeatable.")
  Map<String, String> overrides = new LinkedHashMap<>();

  @Override
  public Integer call() throws InterruptedException {
    SendcapConfig settings = SendcapConfig.load(config, overrides);
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
