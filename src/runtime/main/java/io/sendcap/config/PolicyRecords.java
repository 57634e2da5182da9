package io.sendcap.config;

import java.nio.charset.StandardCharsets;

/**
 * The records of the policies topic: one key, {@value #KEY}, whose value is the policy file's YAML
 * as published, with the file's name in the header {@value #SOURCE_HEADER}. The topic is compacted
 * and has one partition, so its newest record is the version in force; a version is numbered by its
 * offset plus one.
 */
public final class PolicyRecords {
  /** The key of every record. */
  public static final String KEY = "policies";

  /** The header naming the file a version was published from. */
  public static final String SOURCE_HEADER = "sendcap.policies.source";

  private PolicyRecords() {}

  /** The version number of the record at {@code offset}. */
  public static long version(long offset) {
    return offset + 1;
  }

  /**
   * Reads a published version.
   *
   * @throws InvalidConfigException listing every problem of the YAML
   */
  public static LivePolicies.Version read(long offset, byte[] value, String source) {
    long version = version(offset);
    String origin = "topic version " + version + (source == null ? "" : " of " + source);
    Policies policies = Policies.parse(new String(value, StandardCharsets.UTF_8), origin);
    return new LivePolicies.Version(policies, version, origin);
  }
}
