package io.sendcap.limit;

import io.sendcap.config.Policy;

/**
 * One send to check against its user's policy.
 *
 * @param userId the recipient
 * @param messageId the send's unique id; a send already logged under it is not counted again
 * @param now the decision time in epoch milliseconds
 * @param policy the caps to check
 */
public record CapRequest(long userId, String messageId, long now, Policy policy) {}
