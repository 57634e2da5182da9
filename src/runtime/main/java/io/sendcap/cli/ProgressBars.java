package io.sendcap.cli;

import java.io.PrintStream;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * The progress bars of the commands, on standard error: coloured only on a terminal, so that a log
 * file or a pipe gets no escape codes.
 *
 * <p>Whether standard error is a terminal is what {@code bin/sendcap} tells ({@value
 * #TERMINAL_PROPERTY}, from the shell's {@code [ -t 2 ]}); without it, whether the JVM has a
 * console.
 */
public final class ProgressBars {
  /** The system property {@code bin/sendcap} sets to whether standard error is a terminal. */
  public static final String TERMINAL_PROPERTY = "sendcap.stderr.terminal";

  private ProgressBars() {}

  /** A bar named {@code task} up to {@code max}, drawn on {@code stream}. */
  public static ProgressBarBuilder on(PrintStream stream, String task, long max) {
    boolean terminal = onTerminal();
    return new ProgressBarBuilder()
        .setTaskName(task)
        .setInitialMax(max)
        .setStyle(
            terminal ? ProgressBarStyle.COLORFUL_UNICODE_BLOCK : ProgressBarStyle.UNICODE_BLOCK)
        // Off a terminal there is no width to fit: a line long enough for the whole bar.
        .setConsumer(
            terminal
                ? new ConsoleProgressBarConsumer(stream)
                : new ConsoleProgressBarConsumer(stream, UNKNOWN_WIDTH));
  }

  /** How long a bar may be where no terminal says how wide a line is. */
  private static final int UNKNOWN_WIDTH = 120;

  /** Whether standard error is a terminal, as far as can be told. */
  static boolean onTerminal() {
    String told = System.getProperty(TERMINAL_PROPERTY);
    return told != null ? Boolean.parseBoolean(told) : System.console() != null;
  }
}
