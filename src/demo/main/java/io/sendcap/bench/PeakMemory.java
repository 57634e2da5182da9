package io.sendcap.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The peak memory of this process so far.
 *
 * @param heapBytes the sum over the JVM's heap pools of each pool's own peak usage: pools peak at
 *     different moments, so this bounds the heap's peak occupancy from above
 * @param maxHeapBytes the most heap the JVM may use ({@code -Xmx} or its default)
 * @param rssBytes the peak resident set size ({@code VmHWM} of {@code /proc/self/status}), or -1
 *     where the system has no such file
 */
record PeakMemory(long heapBytes, long maxHeapBytes, long rssBytes) {
  private static final Path STATUS = Path.of("/proc/self/status");

  /** Reads the peaks of this process now. */
  static PeakMemory now() {
    long heap = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) {
        heap += pool.getPeakUsage().getUsed();
      }
    }
    return new PeakMemory(heap, Runtime.getRuntime().maxMemory(), peakRss());
  }

  private static long peakRss() {
    List<String> lines;
    try {
      lines = Files.readAllLines(STATUS);
    } catch (IOException e) {
      return -1;
    }
    return vmHwmBytes(lines);
  }

  /** The {@code VmHWM} line of a {@code /proc/PID/status} in bytes, or -1 if it has none. */
  static long vmHwmBytes(List<String> statusLines) {
    for (String line : statusLines) {
      if (line.startsWith("VmHWM:")) {
        String kb = line.substring("VmHWM:".length()).replace("kB", "").trim();
        return Long.parseLong(kb) * 1024;
      }
    }
    return -1;
  }
}
