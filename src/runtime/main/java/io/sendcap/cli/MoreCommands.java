package io.sendcap.cli;

import java.util.List;

/**
 * Subcommands of {@code sendcap} that another jar on the classpath adds, found with {@link
 * java.util.ServiceLoader}: the demo module's {@code demo}, {@code embedded} and {@code bench},
 * which the runtime does not depend on.
 */
public interface MoreCommands {
  /** The commands to add, each a picocli {@code @Command} object, in the order of the help. */
  List<Object> commands();
}
