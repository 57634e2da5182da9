package io.sendcap.limit;

/**
 * One EVALSHA of the sliding-log script: its keys and arguments, as sent to Redis.
 *
 * @param keys the KEYS of the call
 * @param args the ARGV of the call
 */
public record ScriptCall(byte[][] keys, byte[][] args) {}
