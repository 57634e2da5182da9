package io.sendcap.config;

import java.time.Duration;

/**
 * A frequency cap: at most {@code limit} sends to one user in any rolling {@code window}.
 *
 * @param name the window as written in the policy file, e.g. {@code 1d}; reported in suppressions
 * @param window the rolling window
 * @param limit the most sends allowed inside the window, at least 1
 */
public record Cap(String name, Duration window, int limit) {
  /** Creates a cap, rejecting a non-positive window or limit. */
  public Cap {
    if (window.isNegative() || window.isZero() || limit < 1) {
      throw new IllegalArgumentException("cap " + name + " needs a positive window and limit");
    }
  }
}
