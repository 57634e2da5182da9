package io.sendcap.config;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.sendcap.avro.Channel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The policy file: segments in priority order, each with its caps, and the default policy.
 *
 * <p>A user belongs to the first segment of {@link #segments()} that contains them; a user in none
 * gets {@link #defaultPolicy()}.
 *
 * @param segments the segment policies, highest priority first
 * @param defaultPolicy the policy of users in no segment
 * @param global the caps across users (per campaign, per channel, across everything), checked after
 *     the per-user caps
 */
public record Policies(List<Policy> segments, Policy defaultPolicy, List<GlobalCap> global) {
  /**
   * The most caps one policy may have. Every send carries its policy's caps to the script, and the
   * script writes every counter a send changes in one command: a bound keeps both far inside what
   * one call of the script can take.
   */
  public static final int MAX_CAPS = 64;

  /** The most segments a file may name; a user's segment is looked up in each, in order. */
  public static final int MAX_SEGMENTS = 1000;

  /** The most caps across users a file may have. */
  public static final int MAX_GLOBAL_CAPS = 64;

  /**
   * The longest campaign id a global cap may name, and a send may carry: campaign ids are part of
   * the keys of global caps per campaign.
   */
  public static final int MAX_CAMPAIGN_ID = 256;

  private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory());
  private static final String CALENDAR_WINDOWS = "calendar-day, calendar-week or calendar-month";
  private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,63}");

  /** Creates the policies; the lists are copied. */
  public Policies {
    segments = List.copyOf(segments);
    global = List.copyOf(global);
  }

  /** The names of the segments, in priority order. */
  public List<String> segmentNames() {
    return segments.stream().map(Policy::segment).toList();
  }

  /** Reads and validates a policy file, reporting every problem in it at once. */
  public static Policies load(Path file) {
    try {
      return parse(Files.readString(file), file.toString());
    } catch (IOException e) {
      throw InvalidConfigException.unreadable(file, "policy file", e);
    }
  }

  /** Parses and validates policy YAML; {@code source} names it in error messages. */
  public static Policies parse(String yaml, String source) {
    JsonNode root;
    try {
      root = YAML.readTree(yaml);
    } catch (JsonProcessingException e) {
      throw new InvalidConfigException(
          source, List.of("not valid YAML: " + e.getOriginalMessage()));
    }
    Problems problems = new Problems(source);
    if (root == null || !root.isObject()) {
      problems.add("the file must be a mapping with the keys 'segments' and 'default'");
      problems.throwIfAny();
    }
    unknownKeys(root, List.of("segments", "default", "global"), "", problems);
    List<Policy> segments = new ArrayList<>();
    JsonNode list = root.path("segments");
    if (!list.isMissingNode() && !list.isArray()) {
      problems.add("segments", list, "a list of segments, highest priority first");
    } else if (list.size() > MAX_SEGMENTS) {
      problems.add(
          "segments", "[" + list.size() + " segments]", "at most " + MAX_SEGMENTS + " segments");
      list = MissingNode.getInstance();
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; list.isArray() && i < list.size(); i++) {
      String path = "segments[" + i + "]";
      JsonNode node = list.get(i);
      String name = node.path("name").asText(null);
      if (name == null || !NAME.matcher(name).matches() || name.equals(Policy.DEFAULT)) {
        problems.add(
            path + ".name",
            name,
            "lower-case letters, digits, '.', '_' or '-', at most 64, and not 'default'");
      } else if (!seen.add(name)) {
        problems.add(path + ".name", name, "each segment may appear once");
      }
      unknownKeys(node, List.of("name", "caps", "min-interval", "zone"), path + ".", problems);
      segments.add(policy(name, node, path, problems));
    }
    JsonNode def = root.path("default");
    if (def.isMissingNode()) {
      problems.add("default", null, "a policy for users in no segment, with at least one cap");
    } else {
      unknownKeys(def, List.of("caps", "min-interval", "zone"), "default.", problems);
    }
    Policy defaultPolicy = policy(Policy.DEFAULT, def, "default", problems);
    List<GlobalCap> global = global(root.path("global"), problems);
    problems.throwIfAny();
    return new Policies(segments, defaultPolicy, global);
  }

  private static List<GlobalCap> global(JsonNode list, Problems problems) {
    List<GlobalCap> caps = new ArrayList<>();
    if (list.isMissingNode()) {
      return caps;
    }
    if (!list.isArray()) {
      problems.add("global", list, "a list of caps across users");
      return caps;
    }
    if (list.size() > MAX_GLOBAL_CAPS) {
      problems.add(
          "global",
          "[" + list.size() + " caps]",
          "at most " + MAX_GLOBAL_CAPS + " caps across users");
      return caps;
    }
    Set<String> seen = new HashSet<>();
    for (int i = 0; i < list.size(); i++) {
      String path = "global[" + i + "]";
      JsonNode node = list.get(i);
      unknownKeys(
          node,
          List.of("name", "per", "channel", "campaign", "window", "limit", "max-batch"),
          path + ".",
          problems);
      String name = node.path("name").asText(null);
      if (name == null || !NAME.matcher(name).matches()) {
        problems.add(
            path + ".name", name, "lower-case letters, digits, '.', '_' or '-', at most 64");
      } else if (!seen.add(name)) {
        problems.add(path + ".name", name, "each global cap may appear once");
      }
      GlobalCap.Per per = GlobalCap.Per.ALL;
      JsonNode perNode = node.path("per");
      if (!perNode.isMissingNode()) {
        try {
          per = GlobalCap.Per.valueOf(perNode.asText().trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
          problems.add(path + ".per", perNode.asText(), "all, campaign or channel");
        }
      }
      Channel channel = channel(node.path("channel"), path, problems);
      JsonNode campaignNode = node.path("campaign");
      String campaign = campaignNode.isMissingNode() ? null : campaignNode.asText();
      if (campaign != null && (campaign.isBlank() || campaign.length() > MAX_CAMPAIGN_ID)) {
        problems.add(
            path + ".campaign",
            campaign,
            "a campaign id of at most " + MAX_CAMPAIGN_ID + " characters");
      }
      String window = node.path("window").asText(null);
      Duration duration = window == null ? null : Durations.parse(window).orElse(null);
      if (duration == null) {
        problems.add(
            path + ".window", window, Durations.ALLOWED + " (fixed windows from the epoch)");
      }
      JsonNode limit = node.path("limit");
      boolean limitOk =
          limit.isIntegralNumber() && limit.canConvertToInt() && limit.intValue() >= 1;
      if (!limitOk) {
        problems.add(
            path + ".limit",
            limit.isMissingNode() ? null : limit.asText(),
            "a whole number from 1 to " + Integer.MAX_VALUE);
      }
      long limitValue = limitOk ? limit.longValue() : 1;
      int maxBatch = (int) Math.max(1, Math.min(Integer.MAX_VALUE, limitValue / 1000));
      JsonNode batch = node.path("max-batch");
      if (!batch.isMissingNode()) {
        if (batch.isIntegralNumber() && batch.canConvertToInt() && batch.intValue() >= 1) {
          maxBatch = batch.intValue();
        } else {
          problems.add(path + ".max-batch", batch.asText(), "a whole number >= 1");
        }
      }
      if (name != null && duration != null && limitOk) {
        caps.add(
            new GlobalCap(
                name, per, channel, campaign, window.trim(), duration, limitValue, maxBatch));
      }
    }
    return caps;
  }

  private static Policy policy(String name, JsonNode node, String path, Problems problems) {
    List<Cap> caps = new ArrayList<>();
    JsonNode list = node.path("caps");
    if (!node.isMissingNode() && (!list.isArray() || list.isEmpty())) {
      problems.add(
          path + ".caps", list.isMissingNode() ? null : list, "a list of one or more caps");
    } else if (list.size() > MAX_CAPS) {
      problems.add(
          path + ".caps", "[" + list.size() + " caps]", "at most " + MAX_CAPS + " caps per policy");
      list = MissingNode.getInstance();
    }
    for (int i = 0; list.isArray() && i < list.size(); i++) {
      String capPath = path + ".caps[" + i + "]";
      JsonNode capNode = list.get(i);
      unknownKeys(
          capNode, List.of("window", "limit", "channel", "algorithm"), capPath + ".", problems);
      String window = capNode.path("window").asText(null);
      Cap.Kind kind = kind(window);
      Duration duration =
          kind == Cap.Kind.ROLLING ? Durations.parse(window).orElse(null) : longest(kind);
      if (duration == null) {
        problems.add(capPath + ".window", window, Durations.ALLOWED + ", or " + CALENDAR_WINDOWS);
      }
      Channel channel = channel(capNode.path("channel"), capPath, problems);
      Cap.Algorithm algorithm = algorithm(capNode.path("algorithm"), window, capPath, problems);
      JsonNode limit = capNode.path("limit");
      if (!limit.canConvertToInt() || !limit.isIntegralNumber() || limit.intValue() < 1) {
        problems.add(
            capPath + ".limit",
            limit.isMissingNode() ? null : limit.asText(),
            "a whole number >= 1");
      } else if (algorithm != null
          && duration != null
          && limit.intValue() > Cap.maxLimit(algorithm, duration)) {
        problems.add(
            capPath + ".limit",
            limit.asText(),
            "at most "
                + Cap.maxLimit(algorithm, duration)
                + " for a "
                + algorithm.key()
                + " cap of "
                + window.trim()
                + " (its count stays below the window in ms"
                + (algorithm == Cap.Algorithm.SLIDING_WINDOW
                    ? ", limit × window below 2^50)"
                    : ")"));
      } else if (duration != null && algorithm != null) {
        caps.add(new Cap(window.trim(), kind, duration, limit.intValue(), channel, algorithm));
      }
    }
    Duration minInterval = Duration.ZERO;
    JsonNode interval = node.path("min-interval");
    if (!interval.isMissingNode()) {
      minInterval = Durations.parse(interval.asText()).orElse(null);
      if (minInterval == null) {
        problems.add(path + ".min-interval", interval.asText(), Durations.ALLOWED);
        minInterval = Duration.ZERO;
      }
    }
    return new Policy(name == null ? "?" : name, caps, minInterval, zone(node, path, problems));
  }

  private static Cap.Kind kind(String window) {
    return switch (window == null ? "" : window.trim()) {
      case "calendar-day" -> Cap.Kind.CALENDAR_DAY;
      case "calendar-week" -> Cap.Kind.CALENDAR_WEEK;
      case "calendar-month" -> Cap.Kind.CALENDAR_MONTH;
      default -> Cap.Kind.ROLLING;
    };
  }

  private static Duration longest(Cap.Kind kind) {
    return switch (kind) {
      case CALENDAR_DAY -> CalendarPeriods.LONGEST_DAY;
      case CALENDAR_WEEK -> CalendarPeriods.LONGEST_WEEK;
      default -> CalendarPeriods.LONGEST_MONTH;
    };
  }

  /** The cap's algorithm: sliding-log if none is named; null (a problem noted) if invalid. */
  private static Cap.Algorithm algorithm(
      JsonNode node, String window, String path, Problems problems) {
    if (node.isMissingNode()) {
      return Cap.Algorithm.SLIDING_LOG;
    }
    Optional<Cap.Algorithm> algorithm =
        Cap.Algorithm.of(node.asText().trim().toLowerCase(Locale.ROOT));
    if (algorithm.isEmpty()) {
      List<String> allowed = Arrays.stream(Cap.Algorithm.values()).map(Cap.Algorithm::key).toList();
      problems.add(path + ".algorithm", node.asText(), "one of " + String.join(", ", allowed));
      return null;
    }
    if (kind(window) != Cap.Kind.ROLLING && algorithm.get() != Cap.Algorithm.SLIDING_LOG) {
      problems.add(
          path + ".algorithm",
          node.asText(),
          "sliding-log only for the calendar window "
              + window.trim()
              + "; sliding-window, fixed-window and token-bucket need a rolling window such as 1d");
      return null;
    }
    return algorithm.get();
  }

  private static Channel channel(JsonNode node, String path, Problems problems) {
    if (node.isMissingNode()) {
      return null;
    }
    String text = node.asText().trim().toUpperCase(Locale.ROOT);
    for (Channel c : Channel.values()) {
      if (c.name().equals(text)) {
        return c;
      }
    }
    List<String> allowed = Arrays.stream(Channel.values()).map(Enum::name).toList();
    problems.add(path + ".channel", node.asText(), "one of " + String.join(", ", allowed));
    return null;
  }

  private static ZoneId zone(JsonNode node, String path, Problems problems) {
    JsonNode zone = node.path("zone");
    if (zone.isMissingNode()) {
      return ZoneOffset.UTC;
    }
    try {
      return ZoneId.of(zone.asText().trim());
    } catch (DateTimeException e) {
      problems.add(path + ".zone", zone.asText(), "a time zone id such as Europe/Berlin or UTC");
      return ZoneOffset.UTC;
    }
  }

  private static void unknownKeys(JsonNode node, List<String> known, String path, Problems p) {
    for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
      String key = it.next();
      if (!known.contains(key)) {
        p.add(
            path + key,
            node.get(key).asText(),
            "unknown key; allowed: " + String.join(", ", known));
      }
    }
  }
}
