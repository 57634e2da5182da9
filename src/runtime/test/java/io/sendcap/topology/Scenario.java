package io.sendcap.topology;

import io.sendcap.avro.Channel;
import java.time.Duration;
import java.time.ZoneId;
import java.util.List;

/**
 * One run's input to {@link CapPathIT}: the policy file, the users, the sends in input order, the
 * batch size and the allowed skew.
 *
 * <p>{@link ScenarioListing} writes it out as a failure prints it.
 */
record Scenario(String yaml, List<User> users, List<Input> inputs, int batchSize, Duration skew) {

  /**
   * A user of a run.
   *
   * @param id the user id
   * @param zone the time zone their sends name, or null (the policy's)
   * @param inSegment whether they are in the segment, when the policies have one
   */
  record User(long id, ZoneId zone, boolean inSegment) {
    @Override
    public String toString() {
      return ScenarioListing.of(this);
    }
  }

  /**
   * One input record.
   *
   * @param pos its position in the input, carried in the send's attributes
   * @param userId the recipient
   * @param messageId the send's id
   * @param channel the send's channel
   * @param campaign the send's campaign
   * @param scheduledAt the decision time under the event clock, epoch ms
   * @param recordTs the record's timestamp, epoch ms
   * @param transactional whether it bypasses caps
   * @param replayOf the position of the input it replays, or -1
   * @param outsideSkew whether {@code scheduledAt} is further than the skew from the record's
   *     timestamp: a dead letter
   * @param tickMs how far the wall clock is advanced after it is piped (0: not)
   */
  record Input(
      int pos,
      long userId,
      String messageId,
      Channel channel,
      String campaign,
      long scheduledAt,
      long recordTs,
      boolean transactional,
      int replayOf,
      boolean outsideSkew,
      long tickMs) {

    /**
     * The same send at position {@code at}, in a record stamped {@code ts}, replaying the input at
     * {@code replays} (or -1) and followed by a wall-clock tick of {@code tick} ms.
     */
    Input with(int at, long ts, int replays, long tick) {
      return new Input(
          at,
          userId,
          messageId,
          channel,
          campaign,
          scheduledAt,
          ts,
          transactional,
          replays,
          outsideSkew,
          tick);
    }

    @Override
    public String toString() {
      return ScenarioListing.of(this);
    }
  }

  /** The user whose id is {@code id}. */
  User user(long id) {
    return users.stream().filter(u -> u.id() == id).findFirst().orElseThrow();
  }

  Scenario withYaml(String other) {
    return new Scenario(other, users, inputs, batchSize, skew);
  }

  Scenario withBatchSize(int size) {
    return new Scenario(yaml, users, inputs, size, skew);
  }

  /** The same scenario with {@code others} for sends, and the same users. */
  Scenario withInputs(List<Input> others) {
    return new Scenario(yaml, users, others, batchSize, skew);
  }

  @Override
  public String toString() {
    return ScenarioListing.of(this);
  }
}
