package io.sendcap.limit;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** Helpers for Lua scripts called by SHA. */
final class Scripts {
  private Scripts() {}

  /** The SHA-1 under which Redis caches a script, as EVALSHA expects it. */
  static String sha1(byte[] script) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(script));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every Java runtime provides SHA-1", e);
    }
  }
}
