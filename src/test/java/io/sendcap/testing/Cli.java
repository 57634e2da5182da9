package io.sendcap.testing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.app.Main;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
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

  /** Runs the command line with {@code args}. */
  public static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = Main.commandLine();
    cli.setOut(new PrintWriter(out));
    cli.setErr(new PrintWriter(err));
    int exit = cli.execute(args);
    return new Result(exit, out.toString(), err.toString());
  }
}
