package io.sendcap.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.cli.Main;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import picocli.CommandLine;

/** Runs {@code bin/sendcap}'s command line in-process and keeps what it printed. */
public final class Cli {
  private Cli() {}

  /** What a command returned and printed on standard output and standard error. */
  public record Result(int exit, String out, String err) {
    /** The output's lines. */
    public List<String> lines() {
      return out.lines().toList();
    }

    /** The last line, read as the JSON object {@code --json} prints there. */
    public JsonNode lastLineJson() {
      List<String> lines = lines();
      try {
        return new ObjectMapper().readTree(lines.get(lines.size() - 1));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  /**
   * Runs the command line with {@code args} as {@code bin/sendcap} does ({@link Main#execute}), on
   * writers made as picocli makes its own for standard output and error (flushed by {@code
   * println}, not by {@code print}), so that what would not reach a terminal is not seen here
   * either.
   */
  public static Result run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CommandLine cli = Main.commandLine();
    cli.setOut(new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), true));
    cli.setErr(new PrintWriter(new OutputStreamWriter(err, StandardCharsets.UTF_8), true));
    int exit = Main.execute(cli, args);
    return new Result(
        exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }
}
