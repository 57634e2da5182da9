package io.sendcap.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.app.SendcapTopics;
import io.sendcap.avro.Suppression;
import io.sendcap.config.SendcapConfig;
import io.sendcap.report.ReportPage;
import io.sendcap.report.SuppressionReport;
import io.sendcap.report.SuppressionReport.Mode;
import io.sendcap.report.SuppressionReport.Row;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import me.tongfei.progressbar.ProgressBar;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code sendcap report}: the suppressed topic summarised for analysts, read from its beginning up
 * to its end offsets when the command starts: suppressions by campaign, segment, channel and
 * reason, shadow ones apart, as a table, JSON lines or an HTML page with charts over time.
 */
@Command(
    name = "report",
    mixinStandardHelpOptions = true,
    description =
        "Counts the suppressed sends on the suppressed topic (committed records, from the oldest to"
            + " the newest at start) by campaign, segment, channel and reason, enforced and shadow"
            + " apart, the largest first. Exits 1 if some records were not Suppressions.")
final class ReportCommand implements Callable<Integer> {
  /** How long the read may make no progress before the broker is taken to be gone. */
  private static final Duration POLL_WAIT = Duration.ofMillis(500);

  private static final ObjectMapper MAPPER = new ObjectMapper();

  @Spec CommandSpec spec;

  @Mixin ConfigOptions options;

  @Option(
      names = "--topic",
      paramLabel = "TOPIC",
      description = "The topic of Suppression records (default: topic.suppressed).")
  String topic;

  @Option(
      names = "--since",
      paramLabel = "TIME",
      converter = InstantConverter.class,
      description =
          "Only suppressions decided at or after TIME: an ISO-8601 instant"
              + " (2026-11-02T06:00:00Z), a date (its midnight UTC) or epoch milliseconds.")
  Instant since;

  @Option(
      names = "--until",
      paramLabel = "TIME",
      converter = InstantConverter.class,
      description = "Only suppressions decided before TIME; as --since.")
  Instant until;

  @Option(
      names = "--campaign",
      paramLabel = "ID",
      description = "Only this campaign's suppressions; repeatable.")
  List<String> campaigns = new ArrayList<>();

  @Option(names = "--json", description = "One JSON object per row and nothing else, for jq.")
  boolean json;

  @Option(
      names = "--html",
      paramLabel = "FILE",
      description = "Also writes the report, with charts over time, as one self-contained page.")
  Path html;

  /** Records read, those among them that are not Suppressions, and where the first of those is. */
  private long records;

  private long unreadable;
  private String firstUnreadable;

  @Override
  public Integer call() {
    SendcapConfig config = options.load();
    String source = topic == null ? config.topics().suppressed() : topic;
    if (since != null && until != null && !since.isBefore(until)) {
      throw new IllegalArgumentException("--since " + since + " is not before --until " + until);
    }
    if (html != null && !Files.isDirectory(html.toAbsolutePath().getParent())) {
      throw new IllegalArgumentException("cannot write " + html + ": its directory does not exist");
    }
    SendcapTopics.requireTopic(config, source);
    String bootstrapServers = config.streams().getProperty("bootstrap.servers");
    Instant readAt = Instant.now().truncatedTo(ChronoUnit.SECONDS);
    SuppressionReport report = new SuppressionReport();
    read(
        SendcapTopics.clientProperties(config),
        bootstrapServers,
        config.brokerTimeout(),
        source,
        ToolSerdes.reader(config, Suppression.class),
        report);

    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      report.rows().forEach(row -> out.println(json(row)));
    } else {
      printTable(out, report);
    }
    out.flush();
    if (html != null) {
      write(
          ReportPage.render(
              report, "Suppressed sends", scope(report, bootstrapServers, source, readAt)));
    }
    PrintWriter err = spec.commandLine().getErr();
    err.printf(
        "%,d records read from %s, %,d suppressions reported%n",
        records, source, report.total(Mode.ENFORCED) + report.total(Mode.SHADOW));
    if (unreadable > 0) {
      err.printf(
          "sendcap: %,d of the records of %s could not be read as Suppressions and were left out"
              + " (the first at %s)%n",
          unreadable, source, firstUnreadable);
    }
    err.flush();
    return unreadable == 0 ? 0 : 1;
  }

  /**
   * Counts the records of {@code source} below the end offsets taken now, with a progress bar on
   * standard error.
   *
   * @throws IllegalArgumentException if the read makes no progress for {@code stallLimit} ({@code
   *     broker.timeout.ms})
   */
  private void read(
      Properties client,
      String bootstrapServers,
      Duration stallLimit,
      String source,
      Deserializer<Suppression> serde,
      SuppressionReport report) {
    try (OutputReader reader = new OutputReader(client, List.of(source), true)) {
      Map<TopicPartition, Long> ends = reader.endOffsets();
      long total = reader.remaining(ends);
      long remaining = total;
      long lastProgress = System.nanoTime();
      try (ProgressBar bar =
          // The total is in offsets, the only count known before reading: transaction markers
          // take offsets too. The records read are counted beside it.
          ProgressBars.on(System.err, "reading " + source, total)
              .setUnit(" offsets", 1)
              .showSpeed()
              .build()) {
        while (remaining > 0) {
          reader.poll(
              POLL_WAIT,
              r -> {
                if (r.offset() < ends.get(new TopicPartition(r.topic(), r.partition()))) {
                  count(r, serde, report);
                }
              });
          long left = reader.remaining(ends);
          if (left < remaining) {
            remaining = left;
            lastProgress = System.nanoTime();
            bar.stepTo(total - remaining);
            bar.setExtraMessage(String.format(" %,d records", records));
          } else if (System.nanoTime() - lastProgress > stallLimit.toNanos()) {
            throw new IllegalArgumentException(
                String.format(
                    "read nothing from %s at %s for %d s with %,d of %,d offsets to go"
                        + " (bootstrap.servers)",
                    source, bootstrapServers, stallLimit.toSeconds(), remaining, total));
          }
        }
      }
    }
  }

  private void count(
      ConsumerRecord<byte[], byte[]> r, Deserializer<Suppression> serde, SuppressionReport report) {
    records++;
    Suppression s;
    try {
      s = serde.deserialize(r.topic(), r.value());
    } catch (SerializationException e) {
      unreadable(r, e.getMessage());
      return;
    }
    if (s == null) {
      unreadable(r, "no value");
    } else if (matches(s)) {
      report.add(s);
    }
  }

  private void unreadable(ConsumerRecord<byte[], byte[]> r, String why) {
    if (unreadable++ == 0) {
      firstUnreadable = r.partition() + "@" + r.offset() + ": " + why;
    }
  }

  private boolean matches(Suppression s) {
    Instant at = s.getDecidedAt();
    return (since == null || !at.isBefore(since))
        && (until == null || at.isBefore(until))
        && (campaigns.isEmpty() || campaigns.contains(s.getSend().getCampaignId()));
  }

  /** The table: a header, the rows, then one total line per mode. */
  private static void printTable(PrintWriter out, SuppressionReport report) {
    List<List<String>> lines = new ArrayList<>();
    lines.add(List.of("mode", "campaign", "segment", "channel", "reason", "count"));
    for (Row row : report.rows()) {
      lines.add(
          List.of(
              row.mode().label(),
              printable(row.campaignId()),
              printable(row.segment()),
              row.channel(),
              row.reasonLabel(),
              String.format("%,d", row.count())));
    }
    int[] widths = new int[6];
    for (List<String> line : lines) {
      for (int c = 0; c < widths.length; c++) {
        widths[c] = Math.max(widths[c], line.get(c).length());
      }
    }
    for (Mode mode : Mode.values()) {
      widths[5] = Math.max(widths[5], String.format("%,d", report.total(mode)).length());
    }
    for (List<String> line : lines) {
      StringBuilder b = new StringBuilder();
      for (int c = 0; c < 5; c++) {
        b.append(String.format("%-" + widths[c] + "s  ", line.get(c)));
      }
      out.println(b.append(String.format("%" + widths[5] + "s", line.get(5))));
    }
    int labelWidth = widths[0] + widths[1] + widths[2] + widths[3] + widths[4] + 8;
    for (Mode mode : Mode.values()) {
      out.printf(
          "%-" + labelWidth + "s  %" + widths[5] + "s%n",
          "total " + mode.label(),
          String.format("%,d", report.total(mode)));
    }
  }

  /** Text from a record as it may go to a terminal: control characters shown as U+FFFD. */
  private static String printable(String text) {
    return text.codePoints()
        .map(c -> Character.isISOControl(c) ? '\uFFFD' : c)
        .collect(StringBuilder::new, StringBuilder::appendCodePoint, StringBuilder::append)
        .toString();
  }

  private static String json(Row row) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("mode", row.mode().label());
    m.put("campaignId", row.campaignId());
    m.put("segment", row.segment());
    m.put("channel", row.channel());
    m.put("reason", row.reason());
    m.put("capWindow", row.capWindow());
    m.put("globalCap", row.globalCap());
    m.put("count", row.count());
    try {
      return MAPPER.writeValueAsString(m);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot print a report row as JSON", e);
    }
  }

  /** The lines under the page's heading: what was read, when, and which filters applied. */
  private List<String> scope(
      SuppressionReport report, String bootstrapServers, String source, Instant readAt) {
    List<String> scope = new ArrayList<>();
    scope.add(
        "Topic "
            + source
            + " on "
            + bootstrapServers
            + ", read up to its end offsets at "
            + readAt
            + " (committed records only).");
    scope.add(
        report
            .first()
            .map(first -> "Decided from " + first + " to " + report.last().orElseThrow() + ".")
            .orElse("No suppressions."));
    List<String> filters = new ArrayList<>();
    if (since != null) {
      filters.add("--since " + since);
    }
    if (until != null) {
      filters.add("--until " + until);
    }
    if (!campaigns.isEmpty()) {
      filters.add("--campaign " + String.join(", ", campaigns));
    }
    if (!filters.isEmpty()) {
      scope.add("Only " + String.join("; ", filters) + ".");
    }
    return scope;
  }

  private void write(String page) {
    try {
      Files.writeString(html, page, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot write " + html + ": " + e.getMessage(), e);
    }
  }

  /** An instant as ISO-8601, a date (its midnight UTC) or epoch milliseconds. */
  static final class InstantConverter implements ITypeConverter<Instant> {
    @Override
    public Instant convert(String value) {
      try {
        if (value.chars().allMatch(Character::isDigit)) {
          return Instant.ofEpochMilli(Long.parseLong(value));
        }
        return value.length() == 10
            ? LocalDate.parse(value).atStartOfDay(ZoneOffset.UTC).toInstant()
            : Instant.parse(value);
      } catch (DateTimeParseException | NumberFormatException e) {
        throw new TypeConversionException(
            "'"
                + value
                + "' is not an ISO-8601 instant (2026-11-02T06:00:00Z), a date (2026-11-02) or"
                + " epoch milliseconds");
      }
    }
  }
}
