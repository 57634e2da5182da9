package io.sendcap.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The CPU time of this JVM's threads, by what they work for: the Kafka Streams application under
 * measurement (its stream threads, its Kafka clients, the Lettuce threads that talk to Redis), the
 * JIT compiler, the garbage collector, and the rest of the JVM (the embedded broker, the blast's
 * producer, the reader that counts the outputs).
 *
 * <p>A {@link #snapshot()} records each live Java thread's CPU time ({@link ThreadMXBean}) and, on
 * Linux, that of the JVM's own compiler and collector threads, which are not Java threads ({@code
 * /proc/self/task}, in clock ticks of 10 ms). {@link #since} attributes the difference to a share.
 * A thread that ends between two snapshots is not counted apart: its CPU time falls in {@link
 * Share#REST}, which is the process's CPU time minus every other share.
 *
 * <p>A snapshot also records the process's minor page faults ({@code /proc/self/stat}): memory
 * touched for the first time, as when the heap grows, costs CPU in the kernel that the figures
 * above count in whichever thread touched it.
 */
final class ThreadCpu {
  /** What a thread works for. */
  enum Share {
    /** The application's stream threads: reading, deciding, forwarding, the state store. */
    STREAM_THREADS,
    /**
     * The application's other threads: its Kafka clients' network and heartbeat threads, the global
     * stream thread, the state updater.
     */
    OTHER_APP_THREADS,
    /** The Lettuce threads that encode script calls and decode Redis's replies. */
    REDIS_CLIENT,
    /** The JIT compiler's threads (C1, C2). */
    JIT_COMPILER,
    /** The garbage collector's threads (G1's workers, concurrent marking and refinement). */
    GARBAGE_COLLECTOR,
    /** Every other thread of the JVM: broker, blast producer, reader, threads that ended. */
    REST
  }

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final Path TASKS = Path.of("/proc/self/task");
  private static final Path STAT = Path.of("/proc/self/stat");
  private static final long NANOS_PER_TICK = 10_000_000; // USER_HZ is 100 on Linux

  private final Map<Long, Long> cpuNanosByThread;
  private final Map<Long, String> names;
  private final Map<Share, Long> jvmThreadsNanos;
  private final long processCpuNanos;
  private final long compilationMillis;
  private final long minorFaults;

  private ThreadCpu(
      Map<Long, Long> cpuNanosByThread,
      Map<Long, String> names,
      Map<Share, Long> jvmThreadsNanos,
      long process,
      long compilation,
      long minorFaults) {
    this.cpuNanosByThread = cpuNanosByThread;
    this.names = names;
    this.jvmThreadsNanos = jvmThreadsNanos;
    this.processCpuNanos = process;
    this.compilationMillis = compilation;
    this.minorFaults = minorFaults;
  }

  /** The CPU time of every live thread and of the whole process, now. */
  static ThreadCpu snapshot() {
    Map<Long, Long> cpu = new HashMap<>();
    Map<Long, String> names = new HashMap<>();
    long[] ids = THREADS.getAllThreadIds();
    ThreadInfo[] infos = THREADS.getThreadInfo(ids);
    for (int i = 0; i < ids.length; i++) {
      long nanos = THREADS.getThreadCpuTime(ids[i]);
      if (infos[i] != null && nanos >= 0) {
        cpu.put(ids[i], nanos);
        names.put(ids[i], infos[i].getThreadName());
      }
    }
    return new ThreadCpu(
        cpu,
        names,
        jvmThreads(),
        ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime(),
        ManagementFactory.getCompilationMXBean().getTotalCompilationTime(),
        processMinorFaults());
  }

  /** The process's minor page faults so far; -1 where there is no {@code /proc/self/stat}. */
  private static long processMinorFaults() {
    try {
      return minorFaults(Files.readString(STAT));
    } catch (IOException e) {
      return -1;
    }
  }

  /**
   * The CPU time of the JVM's compiler and collector threads, by their names in {@code
   * /proc/self/task/<tid>/comm}; none where there is no such directory.
   */
  private static Map<Share, Long> jvmThreads() {
    Map<Share, Long> nanos = new EnumMap<>(Share.class);
    if (!Files.isDirectory(TASKS)) {
      return nanos;
    }
    try (Stream<Path> tasks = Files.list(TASKS)) {
      tasks.forEach(
          task -> {
            try {
              String comm = Files.readString(task.resolve("comm")).strip();
              Share share =
                  comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")
                      ? Share.JIT_COMPILER
                      : comm.startsWith("GC Thread") || comm.startsWith("G1 ")
                          ? Share.GARBAGE_COLLECTOR
                          : null;
              if (share != null) {
                nanos.merge(share, ticks(Files.readString(task.resolve("stat"))), Long::sum);
              }
            } catch (IOException e) {
              // the thread ended meanwhile: its time falls in the rest
            }
          });
    } catch (IOException e) {
      return nanos;
    }
    return nanos;
  }

  /** User and system time of a {@code stat} line, in nanoseconds. */
  static long ticks(String stat) {
    String[] fields = afterName(stat);
    // fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name
    return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) * NANOS_PER_TICK;
  }

  /** The minor page faults of a {@code stat} line (its 10th field, minflt). */
  static long minorFaults(String stat) {
    return Long.parseLong(afterName(stat)[7]);
  }

  /** The fields of a {@code stat} line after the command name (field 2), from the state on. */
  private static String[] afterName(String stat) {
    // the command name, in parentheses, may hold spaces: count fields after its closing one
    return stat.substring(stat.lastIndexOf(')') + 2).split(" ");
  }

  /**
   * The minor page faults of the process between {@code start} and this snapshot; -1 where they
   * cannot be read.
   */
  long minorFaultsSince(ThreadCpu start) {
    return minorFaults < 0 || start.minorFaults < 0 ? -1 : minorFaults - start.minorFaults;
  }

  /** The CPU time this JVM had used at the snapshot, every thread of it. */
  long processCpuNanos() {
    return processCpuNanos;
  }

  /**
   * The time the JIT compiler spent compiling between {@code start} and this snapshot, in seconds
   * of its threads' elapsed time, as the JVM reports it.
   */
  double compilationSecondsSince(ThreadCpu start) {
    return (compilationMillis - start.compilationMillis) / 1e3;
  }

  /**
   * The CPU seconds used between {@code start} and this snapshot, by share, for the application
   * whose threads' names contain {@code applicationId}.
   */
  Map<Share, Double> since(ThreadCpu start, String applicationId) {
    Map<Share, Long> nanos = new EnumMap<>(Share.class);
    for (Share s : Share.values()) {
      nanos.put(s, 0L);
    }
    for (Map.Entry<Long, Long> e : cpuNanosByThread.entrySet()) {
      long used = e.getValue() - start.cpuNanosByThread.getOrDefault(e.getKey(), 0L);
      Share share = shareOf(names.get(e.getKey()), applicationId);
      if (share != Share.REST) {
        nanos.merge(share, used, Long::sum);
      }
    }
    for (Share s : new Share[] {Share.JIT_COMPILER, Share.GARBAGE_COLLECTOR}) {
      long used = jvmThreadsNanos.getOrDefault(s, 0L) - start.jvmThreadsNanos.getOrDefault(s, 0L);
      nanos.put(s, Math.max(0, used));
    }
    long counted = nanos.values().stream().mapToLong(Long::longValue).sum();
    nanos.put(Share.REST, Math.max(0, processCpuNanos - start.processCpuNanos - counted));
    Map<Share, Double> seconds = new EnumMap<>(Share.class);
    nanos.forEach((s, n) -> seconds.put(s, n / 1e9));
    return seconds;
  }

  /**
   * The share of a Java thread by its name: Kafka Streams names its threads and its clients'
   * threads after the application id ({@code <id>-<uuid>-StreamThread-1}, {@code
   * kafka-producer-network-thread | <id>-<uuid>-StreamThread-1-producer}, {@code
   * kafka-coordinator-heartbeat-thread | <id>}), Lettuce its own {@code lettuce-...}.
   */
  static Share shareOf(String name, String applicationId) {
    if (name.startsWith("lettuce-")) {
      return Share.REDIS_CLIENT;
    }
    if (!name.contains(applicationId)) {
      return Share.REST;
    }
    return name.contains("-StreamThread-") && !name.startsWith("kafka-")
        ? Share.STREAM_THREADS
        : Share.OTHER_APP_THREADS;
  }
}
