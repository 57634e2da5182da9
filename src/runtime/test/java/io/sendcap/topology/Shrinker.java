package io.sendcap.topology;

import io.sendcap.config.Policies;
import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * The shrinker of {@link CapPathIT}'s failing scenarios: it looks for the smallest scenario that
 * still fails a given check, since QuickTheories shrinks the random draws only, not the inputs they
 * make.
 *
 * <p>It takes away sends in halves, quarters, down to one at a time, then policy lines (caps,
 * minimum interval, zones, global caps) one at a time, then the wall-clock ticks and batching.
 * Removing sends keeps the rest admissible: the stream time can only fall. It runs at most {@value
 * #SHRINK_RUNS} candidates.
 */
final class Shrinker {
  /** Runs a failing input's shrinking may take. */
  private static final int SHRINK_RUNS = 400;

  private final String check;
  private final Function<Scenario, List<String>> problems;
  private int runs;

  private Shrinker(String check, Function<Scenario, List<String>> problems) {
    this.check = check;
    this.problems = problems;
  }

  /**
   * The smallest scenario found that still fails {@code check}: one of whose {@code problems}
   * starts with it.
   *
   * @param failing a scenario that fails {@code check}
   * @param check a check's letter in brackets, as problems start with it: {@code [a]}, …
   * @param problems the problems of a run of a scenario
   */
  static Scenario shrink(
      Scenario failing, String check, Function<Scenario, List<String>> problems) {
    Shrinker shrinker = new Shrinker(check, problems);
    Scenario best = shrinker.withFewerSends(failing);
    best = shrinker.withFewerPolicyLines(best);
    return shrinker.calmer(best);
  }

  /** Whether {@code candidate} is a valid scenario that fails the check, while runs are left. */
  private boolean fails(Scenario candidate) {
    if (runs++ >= SHRINK_RUNS) {
      return false;
    }
    try {
      Policies.parse(candidate.yaml(), "shrinking");
    } catch (RuntimeException invalid) {
      return false;
    }
    return problems.apply(candidate).stream().anyMatch(p -> p.startsWith(check));
  }

  private Scenario withFewerSends(Scenario best) {
    for (int chunk = Math.max(1, best.inputs().size() / 2); chunk >= 1; chunk /= 2) {
      for (int start = 0; start < best.inputs().size(); ) {
        Scenario candidate = without(best, start, Math.min(best.inputs().size(), start + chunk));
        if (!candidate.inputs().isEmpty() && fails(candidate)) {
          best = candidate;
        } else {
          start += chunk;
        }
      }
    }
    return best;
  }

  private Scenario withFewerPolicyLines(Scenario best) {
    for (int i = best.yaml().split("\n").length - 1; i >= 0; i--) {
      List<String> fewer = new ArrayList<>(List.of(best.yaml().split("\n")));
      String line = i < fewer.size() ? fewer.get(i).trim() : "";
      if (line.startsWith("- {") || line.startsWith("min-interval:") || line.startsWith("zone:")) {
        fewer.remove(i);
        if (fewer.get(fewer.size() - 1).equals("global:")) {
          fewer.remove(fewer.size() - 1); // its last cap gone: no global caps
        }
        Scenario candidate = best.withYaml(String.join("\n", fewer) + "\n");
        if (fails(candidate)) {
          best = candidate;
        }
      }
    }
    return best;
  }

  /** The scenario without wall-clock ticks, then in batches of one, where it still fails. */
  private Scenario calmer(Scenario best) {
    Scenario calm = withoutTicks(best);
    if (!calm.equals(best) && fails(calm)) {
      best = calm;
    }
    if (best.batchSize() > 1 && fails(best.withBatchSize(1))) {
      best = best.withBatchSize(1);
    }
    return best;
  }

  /**
   * The same scenario without the inputs at positions {@code from} to {@code to} (exclusive): the
   * rest renumbered, a replay whose first send is gone made a first send, and only the users they
   * name kept.
   */
  private static Scenario without(Scenario s, int from, int to) {
    List<Input> kept = new ArrayList<>(s.inputs().subList(0, from));
    kept.addAll(s.inputs().subList(to, s.inputs().size()));
    List<Input> renumbered = new ArrayList<>();
    Map<String, Integer> first = new HashMap<>();
    for (Input in : kept) {
      int pos = renumbered.size();
      Integer original = in.outsideSkew() ? null : first.get(in.userId() + "/" + in.messageId());
      if (!in.outsideSkew()) {
        first.putIfAbsent(in.userId() + "/" + in.messageId(), pos);
      }
      renumbered.add(in.with(pos, in.recordTs(), original == null ? -1 : original, in.tickMs()));
    }
    Set<Long> named = new HashSet<>();
    renumbered.forEach(in -> named.add(in.userId()));
    List<User> left = s.users().stream().filter(u -> named.contains(u.id())).toList();
    return new Scenario(s.yaml(), left, renumbered, s.batchSize(), s.skew());
  }

  /** The same scenario with no wall-clock tick after any send. */
  private static Scenario withoutTicks(Scenario s) {
    return s.withInputs(
        s.inputs().stream().map(in -> in.with(in.pos(), in.recordTs(), in.replayOf(), 0)).toList());
  }
}
