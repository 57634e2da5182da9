package io.sendcap.demo;

import io.sendcap.bench.BenchCommand;
import io.sendcap.cli.MoreCommands;
import java.util.List;

/** The commands the demo module adds to {@code sendcap}: demo, embedded and bench. */
public final class DemoCommands implements MoreCommands {
  @Override
  public List<Object> commands() {
    return List.of(new DemoCommand(), new EmbeddedCommand(), new BenchCommand());
  }
}
