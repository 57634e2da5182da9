package io.sendcap.limit;

import io.lettuce.core.cluster.SlotHash;
import io.sendcap.avro.Channel;
import io.sendcap.config.CalendarPeriods;
import io.sendcap.config.Cap;
import io.sendcap.config.Policy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Groups the requests of a batch into calls of the caps script ({@code lua/sliding_log.lua}), each
 * deciding up to {@code sendsPerCall} sends whose keys share a cluster slot, in request order
 * within a slot.
 *
 * <p>The caps that apply to a send (its policy's caps for all channels or for the send's channel)
 * form its <em>shape</em>; each call carries its distinct shapes once, and each send gives the
 * argument index where its shape starts. Each send also carries the bounds of the current period of
 * each of its calendar caps, computed here because they depend on the user's time zone and its
 * daylight-saving changes. The layout is described in {@code lua/sliding_log.lua}.
 */
final class CallBuilder {
  /** One script call and, for each send it decides, where its decision goes. */
  record Call(ScriptCall script, int[] requestIndexes, List<int[]> capIndexes) {}

  private final UserKeys keys;
  private final long retentionMs;
  private final long disorderMs;
  private final int sendsPerCall;
  private final boolean cluster;

  /** Shapes by policy (compared by identity: policies are loaded once), then channel ordinal. */
  private final Map<Policy, Shape[]> shapes = new IdentityHashMap<>();

  /**
   * @param keys the key of each user's log
   * @param retentionMs how long a logged send is kept at least, for replays
   * @param disorderMs how much longer, in wall time, a key must outlive its newest logged send
   *     because sends are decided out of order: 0 under the wall clock; under the event clock,
   *     twice the maximum skew (a send may be logged up to the skew ahead of its record's time, and
   *     a send counting it may come up to the skew behind)
   * @param sendsPerCall how many sends one call decides at most
   * @param cluster whether calls must group sends by cluster slot
   */
  CallBuilder(UserKeys keys, long retentionMs, long disorderMs, int sendsPerCall, boolean cluster) {
    this.keys = keys;
    this.retentionMs = retentionMs;
    this.disorderMs = disorderMs;
    this.sendsPerCall = sendsPerCall;
    this.cluster = cluster;
    LATEST.forEach((kind, latest) -> periods.put(kind, new HashMap<>(latest)));
  }

  /** The calls that decide {@code requests}. */
  List<Call> calls(List<CapRequest> requests) {
    List<Call> calls = new ArrayList<>();
    Map<Integer, Group> open = new LinkedHashMap<>();
    MessageDigest sha256 = MessageIds.borrowDigest();
    try {
      for (int i = 0; i < requests.size(); i++) {
        byte[] key = keys.key(requests.get(i).userId());
        int slot = cluster ? SlotHash.getSlot(key) : 0;
        Group group = open.computeIfAbsent(slot, s -> new Group());
        if (!group.fits(requests.get(i))) {
          calls.add(group.build());
          group = new Group();
          open.put(slot, group);
        }
        group.add(i, key, requests.get(i), sha256);
        if (group.size() == sendsPerCall) {
          calls.add(group.build());
          open.remove(slot);
        }
      }
    } finally {
      MessageIds.giveBack(sha256);
    }
    open.values().forEach(g -> calls.add(g.build()));
    return calls;
  }

  /** The sends of one call being assembled. */
  private final class Group {
    private final List<byte[]> keys = new ArrayList<>(sendsPerCall);
    private final int[] indexes = new int[sendsPerCall];
    private final List<int[]> capIndexes = new ArrayList<>(sendsPerCall);
    private final Map<Shape, Integer> shapeIndexes = new IdentityHashMap<>();
    private final List<Shape> used = new ArrayList<>();
    private int nextShapeIndex = 2;
    private long timeFloor = Long.MAX_VALUE;

    /** The sends' arguments, in the script's one string, as far as its position. */
    private ByteBuffer sends = ByteBuffer.allocate(SEND_BYTES * sendsPerCall);

    int size() {
      return keys.size();
    }

    /**
     * Whether the send's shape can join the call: a send gives its shape's argument index in two
     * bytes, so a call's shapes end before argument 32767 (a policy's caps, bounded by {@link
     * io.sendcap.config.Policies#MAX_CAPS}, take a few hundred arguments).
     */
    boolean fits(CapRequest r) {
      Shape shape = shape(r.policy(), r.channel());
      return keys.isEmpty()
          || shapeIndexes.containsKey(shape)
          || nextShapeIndex + shape.args().size() < Short.MAX_VALUE;
    }

    void add(int index, byte[] key, CapRequest r, MessageDigest sha256) {
      Shape shape = shape(r.policy(), r.channel());
      Integer number = shapeIndexes.get(shape);
      if (number == null) {
        used.add(shape);
        number = nextShapeIndex;
        nextShapeIndex += shape.args().size();
        shapeIndexes.put(shape, number);
      }
      indexes[keys.size()] = index;
      keys.add(key);
      capIndexes.add(shape.capIndexes());
      timeFloor = Math.min(timeFloor, r.timeFloor());
      long now = r.now();
      int digits = Resp.decimalLength(now);
      byte[] member = MessageIds.member(r.messageId(), r.channel(), sha256);
      ensure(3 + digits + member.length + 16 * shape.calendars().length);
      sends.putShort((short) (r.probe() ? -number : number)).put((byte) digits);
      sends.position(Resp.putDecimal(sends.array(), sends.position(), now));
      sends.put(member);
      for (Cap.Kind kind : shape.calendars()) {
        CalendarPeriods.Period period = period(kind, now, r.effectiveZone());
        sends.putLong(period.start()).putLong(period.end());
      }
    }

    private void ensure(int more) {
      if (sends.remaining() < more) {
        sends =
            ByteBuffer.allocate(Math.max(2 * sends.capacity(), sends.position() + more))
                .put(sends.flip());
      }
    }

    Call build() {
      List<byte[]> args = new ArrayList<>(nextShapeIndex);
      args.add(Resp.decimal(timeFloor));
      for (Shape shape : used) {
        args.addAll(shape.args());
      }
      args.add(Arrays.copyOf(sends.array(), sends.position()));
      ScriptCall call = new ScriptCall(keys.toArray(new byte[0][]), args.toArray(new byte[0][]));
      return new Call(call, Arrays.copyOf(indexes, keys.size()), capIndexes);
    }
  }

  /** The bytes of a send without calendar caps: shape, length, a 13-digit time, member. */
  private static final int SEND_BYTES = 2 + 1 + 13 + MessageIds.LENGTH;

  /**
   * The period last worked out for each kind of calendar cap and zone by any builder of the
   * process, which a new builder starts from: one that started empty took, at a new instance's
   * first sends, a path the compiled code of earlier builders had never taken, and had it compiled
   * again (BENCHMARKS.md).
   */
  /** The most zones whose periods a builder, and the process, keeps for each kind of cap. */
  static final int MAX_ZONES = 512;

  private static final Map<Cap.Kind, Map<ZoneId, CalendarPeriods.Period>> LATEST =
      new EnumMap<>(Cap.Kind.class);

  static {
    for (Cap.Kind kind : Cap.Kind.values()) {
      LATEST.put(kind, new ConcurrentHashMap<>());
    }
  }

  /**
   * The last period worked out for each kind of calendar cap and zone: a batch's sends share few.
   * Each builder keeps its own, so that a task deciding an earlier day's sends under the event
   * clock does not take turns with the others at replacing the process's.
   */
  private final Map<Cap.Kind, Map<ZoneId, CalendarPeriods.Period>> periods =
      new EnumMap<>(Cap.Kind.class);

  /** The calendar period holding {@code now} in {@code zone}, as {@link CalendarPeriods#of}. */
  private CalendarPeriods.Period period(Cap.Kind kind, long now, ZoneId zone) {
    Map<ZoneId, CalendarPeriods.Period> byZone = periods.get(kind);
    CalendarPeriods.Period last = byZone.get(zone);
    // One comparison for both ends: a new instance's first sends may come before the period the
    // process last worked out (a bench replays the same days), and a second comparison, for that
    // side alone, would be a branch the compiled code had never taken.
    if (last != null && Long.compareUnsigned(now - last.start(), last.end() - last.start()) < 0) {
      return last;
    }
    CalendarPeriods.Period period = CalendarPeriods.of(kind, Instant.ofEpochMilli(now), zone);
    remember(byZone, zone, period);
    remember(LATEST.get(kind), zone, period);
    return period;
  }

  /**
   * Keeps {@code period} for {@code zone}, in a map of at most {@link #MAX_ZONES} zones: zones come
   * from the sends (their {@code userTimeZone}), and there are half a million valid ids of fixed
   * offsets alone. A map that is full starts again; it is only a shortcut.
   */
  private static void remember(
      Map<ZoneId, CalendarPeriods.Period> byZone, ZoneId zone, CalendarPeriods.Period period) {
    if (byZone.size() >= MAX_ZONES && !byZone.containsKey(zone)) {
      byZone.clear();
    }
    byZone.put(zone, period);
  }

  /** How many zones' periods this builder holds, of all kinds. */
  int zonesHeld() {
    return periods.values().stream().mapToInt(Map::size).sum();
  }

  /** The shape of sends on {@code channel} under {@code policy}, built once and reused. */
  private Shape shape(Policy policy, Channel channel) {
    return shapes.computeIfAbsent(policy, this::shapesOf)[channel.ordinal()];
  }

  /**
   * The shapes of sends under {@code policy}, by channel ordinal, all built at once: a builder that
   * built them as sends came would take, at a new instance's first sends, a branch the compiled
   * code of earlier instances had never taken, and have it compiled again. Channels with the same
   * caps share one shape, so that a call carries and the script parses it once (about 1.5 us of
   * Redis CPU per shape and call on Redis 7.0).
   */
  private Shape[] shapesOf(Policy policy) {
    Shape[] byChannel = new Shape[Channel.values().length];
    for (Channel channel : Channel.values()) {
      Shape shape = Shape.of(policy, channel, retentionMs, disorderMs);
      for (Shape other : byChannel) {
        if (other != null && other.caps().equals(shape.caps())) {
          shape = other;
          break;
        }
      }
      byChannel[channel.ordinal()] = shape;
    }
    return byChannel;
  }

  /**
   * The caps of a policy that apply to sends on one channel, with their indexes in the policy, the
   * kinds of its calendar caps in order (each send carries their current periods) and their
   * encoding as script arguments.
   */
  private record Shape(List<Cap> caps, int[] capIndexes, Cap.Kind[] calendars, List<byte[]> args) {
    static Shape of(Policy policy, Channel channel, long retentionMs, long disorderMs) {
      List<Cap> caps = policy.caps().stream().filter(c -> c.appliesTo(channel)).toList();
      int[] indexes = caps.stream().mapToInt(policy.caps()::indexOf).toArray();
      long interval = policy.minInterval().toMillis();
      long horizon = Math.max(policy.logHorizon().toMillis(), retentionMs);
      long ttl = Math.max(policy.horizon().toMillis(), horizon) + disorderMs;
      List<byte[]> args = new ArrayList<>();
      args.add(Resp.decimal(interval));
      args.add(Resp.decimal(horizon));
      args.add(Resp.decimal(ttl));
      args.add(Resp.decimal(caps.size()));
      for (Cap cap : caps) {
        args.add(Resp.decimal(kind(cap)));
        args.add(Resp.decimal(window(cap)));
        args.add(Resp.decimal(cap.limit()));
        args.add(Resp.decimal(cap.channel() == null ? 0 : MessageIds.channelCode(cap.channel())));
        args.add(counterIdentity(cap));
      }
      Cap.Kind[] calendars =
          caps.stream()
              .map(Cap::kind)
              .filter(kind -> kind != Cap.Kind.ROLLING)
              .toArray(Cap.Kind[]::new);
      return new Shape(caps, indexes, calendars, List.copyOf(args));
    }

    /** The script's code for how the cap counts. */
    private static int kind(Cap cap) {
      return switch (cap.algorithm()) {
        case SLIDING_LOG -> cap.kind() == Cap.Kind.ROLLING ? 0 : 1;
        case FIXED_WINDOW -> 2;
        case SLIDING_WINDOW -> 3;
        case TOKEN_BUCKET -> 4;
      };
    }

    /** The window in ms; a token bucket's emission interval; 0 for a calendar period. */
    private static long window(Cap cap) {
      if (cap.kind() != Cap.Kind.ROLLING) {
        return 0;
      }
      return cap.algorithm() == Cap.Algorithm.TOKEN_BUCKET
          ? cap.emissionIntervalMs()
          : cap.window().toMillis();
    }
  }

  /**
   * The identity of a counter cap's state in the user's sorted set, after the script's tag byte:
   * the window in ms, {@code /limit} for a token bucket (whose state is measured in emission
   * intervals), {@code :channel code} for a cap of one channel; empty for a sliding log. Caps of
   * the same algorithm, window and channel count the same sends, so they share their state, also
   * across policies: a user who moves to another segment keeps what was counted.
   */
  static byte[] counterIdentity(Cap cap) {
    if (cap.countsTheLog()) {
      return new byte[0];
    }
    StringBuilder id = new StringBuilder().append(cap.window().toMillis());
    if (cap.algorithm() == Cap.Algorithm.TOKEN_BUCKET) {
      id.append('/').append(cap.limit());
    }
    if (cap.channel() != null) {
      id.append(':').append(MessageIds.channelCode(cap.channel()));
    }
    return id.toString().getBytes(StandardCharsets.US_ASCII);
  }
}
