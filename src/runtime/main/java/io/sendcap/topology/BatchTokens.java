package io.sendcap.topology;

import io.sendcap.avro.ScheduledSend;
import io.sendcap.config.GlobalCap;
import io.sendcap.limit.Deadline;
import io.sendcap.limit.Decision;
import io.sendcap.limit.GlobalQuotas;
import io.sendcap.limit.LimiterUnavailableException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.NavigableSet;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.ToLongFunction;

/**
 * The tokens of global caps that the sends of one batch hold, from their reservation to their
 * settlement by the per-user decisions.
 *
 * <p>Tokens are taken for a whole batch before its per-user call, because that call logs the sends
 * it allows, so a global refusal cannot come after it. A send that cannot have a token of every
 * global cap that applies to it is refused and holds none. Once the per-user decisions are known,
 * each send {@link #settle settles}: an allowed send keeps its tokens; a send capped per user, or a
 * replay (whose first decision is counted already), gives them back, and the sends refused for want
 * of those very tokens get a {@link #secondChances second chance}. If the per-user call fails, the
 * tokens are {@link #forfeit forfeited}: Redis may have logged the sends, and a send delivered
 * later as a replay of one must find its token still counted (fewer sends allowed, never more).
 */
final class BatchTokens {
  /** A send refused by a global cap: the cap and the counter that was full. */
  record Refusal(GlobalCap cap, GlobalQuotas.Key key) {}

  private final GlobalQuotas quotas;
  private final Map<Long, List<GlobalQuotas.Key>> held;
  private final Map<Long, Refusal> refused;
  private final Set<GlobalQuotas.Key> givenBack = new HashSet<>();

  private BatchTokens(
      GlobalQuotas quotas, Map<Long, List<GlobalQuotas.Key>> held, Map<Long, Refusal> refused) {
    this.quotas = quotas;
    this.held = held;
    this.refused = refused;
  }

  /**
   * Takes a token of every global cap that applies, for each send that is not transactional; sends
   * are served in offset order.
   *
   * @param sends the batch's sends by input offset
   * @param decisionTime the time a send is decided at, which picks its counters' windows
   * @param deadline when Redis must have answered by
   * @throws LimiterUnavailableException if Redis cannot be reached in time; every token taken has
   *     been given back
   */
  static BatchTokens reserve(
      GlobalQuotas quotas,
      List<GlobalCap> caps,
      NavigableMap<Long, ScheduledSend> sends,
      ToLongFunction<ScheduledSend> decisionTime,
      Deadline deadline) {
    if (caps.isEmpty()) {
      return none();
    }
    Map<Long, List<GlobalQuotas.Key>> keysOf = new TreeMap<>();
    Map<GlobalQuotas.Key, GlobalCap> capOf = new LinkedHashMap<>();
    Map<GlobalQuotas.Key, Long> wanted = new HashMap<>();
    sends.forEach(
        (offset, send) -> {
          if (send.getTransactional()) {
            return;
          }
          long time = decisionTime.applyAsLong(send);
          List<GlobalQuotas.Key> keys = new ArrayList<>(caps.size());
          for (GlobalCap cap : caps) {
            if (cap.appliesTo(send)) {
              GlobalQuotas.Key key =
                  GlobalQuotas.Key.of(cap.name(), cap.scopeOf(send), time, cap.window().toMillis());
              keys.add(key);
              capOf.put(key, cap);
              wanted.merge(key, 1L, Long::sum);
            }
          }
          if (!keys.isEmpty()) {
            keysOf.put(offset, keys);
          }
        });
    Map<GlobalQuotas.Key, Long> left = new HashMap<>();
    try {
      capOf.forEach(
          (key, cap) ->
              left.put(
                  key,
                  quotas.acquire(key, cap.limit(), cap.maxBatch(), wanted.get(key), deadline)));
    } catch (LimiterUnavailableException e) {
      left.forEach(quotas::giveBack);
      throw e;
    }
    Map<Long, List<GlobalQuotas.Key>> held = new HashMap<>();
    Map<Long, Refusal> refused = new HashMap<>();
    keysOf.forEach(
        (offset, keys) -> {
          GlobalQuotas.Key full =
              keys.stream().filter(k -> left.get(k) == 0).findFirst().orElse(null);
          if (full == null) {
            keys.forEach(k -> left.merge(k, -1L, Long::sum));
            held.put(offset, keys);
          } else {
            refused.put(offset, new Refusal(capOf.get(full), full));
          }
        });
    left.forEach(quotas::giveBack);
    return new BatchTokens(quotas, held, refused);
  }

  /** Tokens of a batch that no global cap applies to: none held, no send refused. */
  static BatchTokens none() {
    return new BatchTokens(null, new HashMap<>(), Map.of());
  }

  /** The sends refused, by input offset. */
  Map<Long, Refusal> refused() {
    return refused;
  }

  /** Whether the send at {@code offset} was refused. */
  boolean isRefused(long offset) {
    return refused.containsKey(offset);
  }

  /**
   * Settles the tokens of the send at {@code offset} by its per-user decision: kept if it was
   * allowed and logged, given back otherwise.
   */
  void settle(long offset, Decision decision) {
    if (held.isEmpty()) {
      return; // no global cap, or none left to settle
    }
    List<GlobalQuotas.Key> keys = held.remove(offset);
    if (keys == null || decision.outcome() == Decision.Outcome.ALLOWED) {
      return;
    }
    keys.forEach(k -> quotas.giveBack(k, 1));
    givenBack.addAll(keys);
  }

  /**
   * Forfeits the tokens of every send not settled yet, after their per-user call failed: Redis may
   * have logged those sends.
   */
  void forfeit() {
    held.values().forEach(keys -> keys.forEach(k -> quotas.forfeit(k, 1)));
    held.clear();
  }

  /**
   * The refused sends (offsets, in order) that may have a token now: those refused by a counter
   * that settled sends gave tokens back to.
   */
  NavigableSet<Long> secondChances() {
    NavigableSet<Long> again = new TreeSet<>();
    refused.forEach(
        (offset, refusal) -> {
          if (givenBack.contains(refusal.key())) {
            again.add(offset);
          }
        });
    return again;
  }
}
