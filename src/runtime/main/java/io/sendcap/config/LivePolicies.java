package io.sendcap.config;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The policies an instance decides with: those of {@code policies.file} until a version is
 * published on the policies topic, then the newest published one. A decision reads {@link
 * #current()} once and uses that version throughout, so a switch never mixes two versions in one
 * decision.
 */
public final class LivePolicies {
  private static final Logger LOG = LoggerFactory.getLogger(LivePolicies.class);

  /**
   * One version of the policies.
   *
   * @param policies the policies
   * @param version 0 for the file, else the published version's number (its offset in the policies
   *     topic plus one)
   * @param origin where it came from, for the log
   */
  public record Version(Policies policies, long version, String origin) {}

  private final List<Consumer<Policies>> listeners = new CopyOnWriteArrayList<>();
  private volatile Version current;

  /** Starts with the policies of the file. */
  public LivePolicies(Policies fromFile, String file) {
    this.current = new Version(fromFile, 0, file);
  }

  /** The version in use. */
  public Version current() {
    return current;
  }

  /** Calls {@code listener} with every version installed from now on. */
  public void onChange(Consumer<Policies> listener) {
    listeners.add(listener);
  }

  /** Uses {@code next} for every decision from now on. */
  public synchronized void install(Version next) {
    Version previous = current;
    current = next;
    listeners.forEach(l -> l.accept(next.policies()));
    LOG.info(
        "policies v{} in use (from {}; was v{}): segments {}",
        next.version(),
        next.origin(),
        previous.version(),
        next.policies().segmentNames());
  }
}
