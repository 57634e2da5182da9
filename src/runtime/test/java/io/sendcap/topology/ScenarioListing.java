package io.sendcap.topology;

import io.sendcap.topology.Scenario.Input;
import io.sendcap.topology.Scenario.User;
import java.time.Instant;
import java.util.stream.Collectors;

/**
 * The listing of a {@link Scenario} in plain text, as {@link CapPathIT} prints a failing input: its
 * policy file, its users, its batching and skew, and its sends one a line, in input order.
 */
final class ScenarioListing {
  private ScenarioListing() {}

  /** The whole scenario, from a blank line: the policy file, then users, settings and sends. */
  static String of(Scenario s) {
    return "\npolicies:\n"
        + s.yaml()
        + "users: "
        + s.users()
        + "\nbatch.max.records="
        + s.batchSize()
        + ", cap.max-skew.ms="
        + s.skew().toMillis()
        + "\nsends:\n  "
        + s.inputs().stream().map(Input::toString).collect(Collectors.joining("\n  "))
        + "\n";
  }

  /** A user: {@code u<id>}, then their zone and their segment if they have them. */
  static String of(User u) {
    return "u"
        + u.id()
        + (u.zone() == null ? "" : " " + u.zone())
        + (u.inSegment() ? " in " + CapPathInputs.SEGMENT : "");
  }

  /**
   * A send: {@code #<pos>}, its message id, user, channel, campaign, decision time and record
   * timestamp, then whichever of transactional, replay, outside the skew and wall-clock tick apply.
   */
  static String of(Input in) {
    StringBuilder b =
        new StringBuilder()
            .append('#')
            .append(in.pos())
            .append(' ')
            .append(in.messageId())
            .append(" u")
            .append(in.userId())
            .append(' ')
            .append(in.channel())
            .append(' ')
            .append(in.campaign())
            .append(" at ")
            .append(Instant.ofEpochMilli(in.scheduledAt()))
            .append(" record ")
            .append(Instant.ofEpochMilli(in.recordTs()));
    if (in.transactional()) {
      b.append(" transactional");
    }
    if (in.replayOf() >= 0) {
      b.append(" replay of #").append(in.replayOf());
    }
    if (in.outsideSkew()) {
      b.append(" outside the skew");
    }
    if (in.tickMs() > 0) {
      b.append(", then the wall clock +").append(in.tickMs()).append(" ms");
    }
    return b.toString();
  }
}
