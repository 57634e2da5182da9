package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.Cap;
import io.sendcap.config.GlobalCap;
import io.sendcap.config.Policies;
import io.sendcap.config.Policy;
import io.sendcap.reference.ReferenceCaps;
import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.time.Instant;
import java.time.LocalDate;
import java.time.YearMonth;
import java.time.ZoneId;
import java.time.temporal.IsoFields;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The checks {@link CapPathIT} makes of a {@link Run} of a {@link Scenario}, from its outputs
 * alone: [a] every input decided exactly once, [b] no window of a user above its cap, [r]
 * transactional sends and replays of allowed sends delivered, [c] without global caps, every
 * decision equal to the reference model's, [d] with global caps, no global window above its limit.
 *
 * <p>Each problem found is a line that starts with its check's letter in brackets and names the
 * sends at fault.
 */
final class CapInvariants {
  private CapInvariants() {}

  /** Every check the run fails, each naming its letter and the sends at fault. */
  static List<String> problems(Scenario s, Run run) {
    List<String> problems = new ArrayList<>();
    decidedOnce(s, run, problems);
    Map<Long, List<Input>> allowed = allowedSends(s, run);
    withinCaps(s, run, allowed, problems);
    replaysAndTransactionalDelivered(s, run, problems);
    if (run.policies().global().isEmpty()) {
      asTheReferenceModel(s, run, problems);
    } else {
      withinGlobalCaps(run, allowed, problems);
    }
    return problems;
  }

  /** [a] Each input has exactly one output, a dead letter iff it is outside the skew. */
  private static void decidedOnce(Scenario s, Run run, List<String> problems) {
    Set<Integer> known = new HashSet<>();
    for (Input in : s.inputs()) {
      known.add(in.pos());
      List<Seen> out = run.outputs().getOrDefault(in.pos(), List.of());
      if (out.size() != 1) {
        problems.add("[a] " + in + ": " + out.size() + " outputs " + out);
      } else if (in.outsideSkew() != out.get(0).equals(Seen.DEAD_LETTER)) {
        problems.add("[a] " + in + ": " + out.get(0));
      }
    }
    for (Integer pos : run.outputs().keySet()) {
      if (!known.contains(pos)) {
        problems.add("[a] an output for no input: position " + pos);
      }
    }
    run.misfits()
        .forEach(m -> problems.add("[a] an output not of the input at its position: " + m));
  }

  /**
   * The sends each user was allowed that consume quota: delivered, not transactional, the first
   * delivery of their message id.
   */
  private static Map<Long, List<Input>> allowedSends(Scenario s, Run run) {
    Map<Long, List<Input>> allowed = new LinkedHashMap<>();
    Set<String> seen = new HashSet<>();
    for (Input in : s.inputs()) {
      Seen out = run.seen(in.pos());
      if (out != null
          && out.delivered()
          && !in.transactional()
          && seen.add(in.userId() + "/" + in.messageId())) {
        allowed.computeIfAbsent(in.userId(), u -> new ArrayList<>()).add(in);
      }
    }
    return allowed;
  }

  /**
   * [b] For each user and cap of their policy, in every true window of the cap no more allowed
   * sends than its limit; and no two allowed sends closer than the minimum interval.
   */
  private static void withinCaps(
      Scenario s, Run run, Map<Long, List<Input>> allowed, List<String> problems) {
    for (Map.Entry<Long, List<Input>> e : allowed.entrySet()) {
      User user = s.user(e.getKey());
      Policy policy = policyOf(run.policies(), user);
      ZoneId zone = user.zone() != null ? user.zone() : policy.zone();
      for (Cap cap : policy.caps()) {
        withinCap(user, cap, zone, e.getValue(), problems);
      }
      apartByTheMinimumInterval(user, policy, e.getValue(), problems);
    }
  }

  /** [b] No window of {@code cap} holds more of the user's allowed sends than its limit. */
  private static void withinCap(
      User user, Cap cap, ZoneId zone, List<Input> allowed, List<String> problems) {
    List<Input> counted =
        allowed.stream()
            .filter(in -> cap.channel() == null || cap.channel() == in.channel())
            .toList();
    for (Input last : counted) {
      List<Input> window =
          counted.stream()
              .filter(in -> sameWindow(cap, in.scheduledAt(), last.scheduledAt(), zone))
              .toList();
      if (window.size() > cap.limit()) {
        problems.add(
            "[b] u"
                + user.id()
                + " holds "
                + window.size()
                + " allowed sends in one window of cap "
                + cap.name()
                + (cap.channel() == null ? "" : " " + cap.channel())
                + " (limit "
                + cap.limit()
                + ") ending at "
                + Instant.ofEpochMilli(last.scheduledAt())
                + ": "
                + window.stream().map(in -> "#" + in.pos()).toList());
        return;
      }
    }
  }

  /** [b] No two of the user's allowed sends are closer in time than the minimum interval. */
  private static void apartByTheMinimumInterval(
      User user, Policy policy, List<Input> allowed, List<String> problems) {
    long interval = policy.minInterval().toMillis();
    List<Input> byTime =
        allowed.stream().sorted((a, b) -> Long.compare(a.scheduledAt(), b.scheduledAt())).toList();
    for (int i = 1; interval > 0 && i < byTime.size(); i++) {
      Input a = byTime.get(i - 1);
      Input b = byTime.get(i);
      if (b.scheduledAt() - a.scheduledAt() < interval) {
        problems.add(
            "[b] u"
                + user.id()
                + " was allowed #"
                + a.pos()
                + " and #"
                + b.pos()
                + " less than the minimum interval "
                + policy.minInterval()
                + " apart");
      }
    }
  }

  /**
   * Whether a send at {@code t} is in the window of {@code cap} that ends with a send at {@code
   * last}: for a rolling window, {@code last − w < t <= last}; for a calendar cap, the same period
   * in {@code zone}.
   */
  private static boolean sameWindow(Cap cap, long t, long last, ZoneId zone) {
    if (cap.kind() == Cap.Kind.ROLLING) {
      return t > last - cap.window().toMillis() && t <= last;
    }
    return period(cap.kind(), t, zone).equals(period(cap.kind(), last, zone));
  }

  private static Object period(Cap.Kind kind, long t, ZoneId zone) {
    LocalDate day = Instant.ofEpochMilli(t).atZone(zone).toLocalDate();
    return switch (kind) {
      case CALENDAR_DAY -> day;
      case CALENDAR_WEEK ->
          List.of(day.get(IsoFields.WEEK_BASED_YEAR), day.get(IsoFields.WEEK_OF_WEEK_BASED_YEAR));
      case CALENDAR_MONTH -> YearMonth.from(day);
      case ROLLING -> throw new IllegalArgumentException("a rolling window has no period");
    };
  }

  private static Policy policyOf(Policies policies, User user) {
    if (user.inSegment() && !policies.segments().isEmpty()) {
      return policies.segments().get(0);
    }
    return policies.defaultPolicy();
  }

  /** [r] Transactional sends, and sends whose message id the user was allowed before, delivered. */
  private static void replaysAndTransactionalDelivered(Scenario s, Run run, List<String> problems) {
    Set<String> allowedIds = new HashSet<>();
    for (Input in : s.inputs()) {
      if (in.outsideSkew()) {
        continue;
      }
      Seen out = run.seen(in.pos());
      String id = in.userId() + "/" + in.messageId();
      boolean delivered = out != null && out.delivered();
      if (in.transactional() && !delivered) {
        problems.add("[r] transactional " + in + ": " + out);
      } else if (allowedIds.contains(id) && !delivered) {
        problems.add("[r] a replay of an allowed send " + in + ": " + out);
      }
      if (delivered) {
        allowedIds.add(id);
      }
    }
  }

  /** [c] Every decision as the reference model's, fed the sends in input order. */
  private static void asTheReferenceModel(Scenario s, Run run, List<String> problems) {
    ReferenceCaps reference = new ReferenceCaps();
    List<String> mismatches = new ArrayList<>();
    for (Input in : s.inputs()) {
      if (in.outsideSkew()) {
        continue;
      }
      User user = s.user(in.userId());
      Policy policy = policyOf(run.policies(), user);
      ReferenceCaps.Verdict verdict =
          reference.decide(
              new ReferenceCaps.Send(
                  in.userId(),
                  in.messageId(),
                  in.channel(),
                  in.scheduledAt(),
                  in.transactional(),
                  user.zone()),
              policy);
      Seen expected = Seen.of(verdict, policy.segment(), in.scheduledAt());
      Seen actual = run.seen(in.pos());
      if (!Objects.equals(expected, actual)) {
        mismatches.add(in + ":\n      sendcap: " + actual + "\n      the rules: " + expected);
      }
    }
    if (!mismatches.isEmpty()) {
      problems.add(
          "[c] "
              + mismatches.size()
              + " decisions differ from the reference model's; the first:\n    "
              + String.join("\n    ", mismatches.subList(0, Math.min(5, mismatches.size()))));
    }
  }

  /** [d] No counter of a global cap holds more allowed sends in one fixed window than its limit. */
  private static void withinGlobalCaps(
      Run run, Map<Long, List<Input>> allowed, List<String> problems) {
    for (GlobalCap cap : run.policies().global()) {
      Map<String, List<Integer>> counters = new TreeMap<>();
      for (List<Input> sends : allowed.values()) {
        for (Input in : sends) {
          ScheduledSend send = run.delivered().get(in.pos());
          if (cap.appliesTo(send)) {
            long window = Math.floorDiv(in.scheduledAt(), cap.window().toMillis());
            String counter =
                cap.scopeOf(send)
                    + " from "
                    + Instant.ofEpochMilli(window * cap.window().toMillis());
            counters.computeIfAbsent(counter, c -> new ArrayList<>()).add(in.pos());
          }
        }
      }
      counters.forEach(
          (counter, positions) -> {
            if (positions.size() > cap.limit()) {
              problems.add(
                  "[d] global cap "
                      + cap.name()
                      + " (limit "
                      + cap.limit()
                      + " per "
                      + cap.windowName()
                      + ") allowed "
                      + positions.size()
                      + " sends of "
                      + counter
                      + ": "
                      + positions);
            }
          });
    }
  }
}
