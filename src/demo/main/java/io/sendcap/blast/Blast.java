package io.sendcap.blast;

import io.sendcap.avro.Channel;
import io.sendcap.avro.ScheduledSend;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.SplittableRandom;

/**
 * A generated campaign blast: {@code sends} sends to users drawn uniformly from {@code users} ids,
 * scheduled evenly over a week of campaigns from {@code start}, with a few transactional sends and,
 * at {@code poisonRate}, records that are not Avro at all.
 */
final class Blast {
  /** The first user id of the generated population. */
  static final long FIRST_USER = 10_000_000L;

  private static final Duration SPAN = Duration.ofDays(7);
  private static final int CAMPAIGNS = 20;
  private static final Channel[] CHANNELS = {
    Channel.EMAIL,
    Channel.EMAIL,
    Channel.EMAIL,
    Channel.EMAIL,
    Channel.EMAIL,
    Channel.EMAIL,
    Channel.PUSH,
    Channel.PUSH,
    Channel.PUSH,
    Channel.SMS
  };

  private final int sends;
  private final int users;
  private final double poisonRate;
  private final SplittableRandom random;
  private final Instant start;

  Blast(int sends, int users, double poisonRate, long seed, Instant start) {
    this.start = start;
    this.sends = sends;
    this.users = users;
    this.poisonRate = poisonRate;
    this.random = new SplittableRandom(seed);
  }

  /** Whether the next record should be poison. Call once per record, before {@link #send}. */
  boolean nextIsPoison() {
    return random.nextDouble() < poisonRate;
  }

  /** Bytes that no Avro decoder accepts. */
  static byte[] poison(int index) {
    return ("not a send #" + index).getBytes(StandardCharsets.UTF_8);
  }

  /** The {@code index}-th send of the blast. */
  ScheduledSend send(int index) {
    long user = FIRST_USER + random.nextInt(users);
    Instant at = start.plusMillis(SPAN.toMillis() * index / sends);
    return ScheduledSend.newBuilder()
        .setMessageId("demo-" + index)
        .setCampaignId("campaign-" + (index * (long) CAMPAIGNS / sends))
        .setUserId(user)
        .setChannel(CHANNELS[random.nextInt(CHANNELS.length)])
        .setScheduledAt(at)
        .setTransactional(random.nextInt(100) == 0)
        .build();
  }

  /** The segment a generated user belongs to: users spread evenly over the segments and none. */
  static int segmentIndex(long userId, int segments) {
    int bucket = (int) ((userId - FIRST_USER) % 10);
    return bucket < 2 * segments ? bucket / 2 : -1;
  }
}
