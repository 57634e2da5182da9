package io.sendcap.report;

import io.sendcap.avro.Suppression;
import io.sendcap.avro.SuppressionReason;
import java.time.Instant;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Suppressions counted by mode, campaign, segment, channel and reason, and over time by reason and
 * by segment; shadow suppressions (sends delivered all the same under {@code cap.mode=shadow}) are
 * counted apart from enforced ones. Records are counted as they are added and not kept.
 */
public final class SuppressionReport {
  /** Whether a suppression held the send back or, in shadow mode, only says it would have. */
  public enum Mode {
    ENFORCED,
    SHADOW;

    /** The mode as printed: {@code enforced}, {@code shadow}. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * The suppressions of one mode, campaign, segment, channel and reason.
   *
   * @param capWindow the failed cap's window for reason {@code CAP}, else null
   * @param globalCap the name of the full global cap for reason {@code GLOBAL_CAP}, without the
   *     campaign or channel it counts (the row names those), else null
   */
  public record Row(
      Mode mode,
      String campaignId,
      String segment,
      String channel,
      String reason,
      String capWindow,
      String globalCap,
      long count) {
    /**
     * The reason as a person reads it: {@code CAP 1d}, {@code GLOBAL_CAP campaign-budget}, {@code
     * MIN_INTERVAL}.
     */
    public String reasonLabel() {
      String which = capWindow != null ? capWindow : globalCap;
      return which == null ? reason : reason + " " + which;
    }

    private Row withCount(long n) {
      return new Row(mode, campaignId, segment, channel, reason, capWindow, globalCap, n);
    }
  }

  private static final Comparator<Row> BY_MODE_THEN_COUNT =
      Comparator.comparing(Row::mode)
          .thenComparing(Row::count, Comparator.reverseOrder())
          .thenComparing(Row::campaignId)
          .thenComparing(Row::segment)
          .thenComparing(Row::channel)
          .thenComparing(Row::reasonLabel);

  /** Keyed by a row with a count of 0. */
  private final Map<Row, Long> counts = new HashMap<>();

  private final Map<Mode, Timeline> byReason = new EnumMap<>(Mode.class);
  private final Map<Mode, Timeline> bySegment = new EnumMap<>(Mode.class);
  private Instant first;
  private Instant last;

  /** Creates an empty report. */
  public SuppressionReport() {
    for (Mode mode : Mode.values()) {
      byReason.put(mode, new Timeline());
      bySegment.put(mode, new Timeline());
    }
  }

  /** Counts one suppression. */
  public void add(Suppression s) {
    Mode mode = s.getShadow() ? Mode.SHADOW : Mode.ENFORCED;
    Row key =
        new Row(
            mode,
            s.getSend().getCampaignId(),
            s.getSegment(),
            s.getSend().getChannel().name(),
            s.getReason().name(),
            s.getReason() == SuppressionReason.CAP ? s.getCapWindow() : null,
            s.getReason() == SuppressionReason.GLOBAL_CAP ? capName(s.getGlobalCap()) : null,
            0);
    counts.merge(key, 1L, Long::sum);
    Instant at = s.getDecidedAt();
    byReason.get(mode).add(at, key.reasonLabel());
    bySegment.get(mode).add(at, key.segment());
    first = first == null || at.isBefore(first) ? at : first;
    last = last == null || at.isAfter(last) ? at : last;
  }

  /** A global cap's name: {@code globalCap} up to the campaign or channel it counts, if any. */
  private static String capName(String globalCap) {
    return globalCap == null ? null : globalCap.split(":", 2)[0];
  }

  /** Every row: the enforced ones, then the shadow ones, each the largest count first. */
  public List<Row> rows() {
    return counts.entrySet().stream()
        .map(e -> e.getKey().withCount(e.getValue()))
        .sorted(BY_MODE_THEN_COUNT)
        .toList();
  }

  /** The suppressions of {@code mode}. */
  public long total(Mode mode) {
    return counts.entrySet().stream()
        .filter(e -> e.getKey().mode() == mode)
        .mapToLong(Map.Entry::getValue)
        .sum();
  }

  /** The suppressions of {@code mode} over time, one series per reason label. */
  public Timeline byReason(Mode mode) {
    return byReason.get(mode);
  }

  /** The suppressions of {@code mode} over time, one series per segment. */
  public Timeline bySegment(Mode mode) {
    return bySegment.get(mode);
  }

  /** The earliest {@code decidedAt} counted, if any. */
  public Optional<Instant> first() {
    return Optional.ofNullable(first);
  }

  /** The latest {@code decidedAt} counted, if any. */
  public Optional<Instant> last() {
    return Optional.ofNullable(last);
  }
}
