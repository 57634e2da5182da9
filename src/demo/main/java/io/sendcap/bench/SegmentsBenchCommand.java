package io.sendcap.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.sendcap.embedded.EmbeddedKafka;
import io.sendcap.segment.SegmentRegistry;
import io.sendcap.segment.SegmentTopic;
import io.sendcap.segment.UserIds;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sendcap bench segments}: segment memory, lookup latency and load time. */
@Command(
    name = "segments",
    mixinStandardHelpOptions = true,
    description =
        "Builds disjoint random segments over a population, measures their bytes against Guava"
            + " Bloom filters at 1e-7, the lookup latency, and the time to load them from the"
            + " segments topic of an embedded broker.")
final class SegmentsBenchCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Option(names = "--users", description = "Population (default: ${DEFAULT-VALUE}).")
  long users = 270_000_000L;

  @Option(names = "--segments", description = "Disjoint segments (default: ${DEFAULT-VALUE}).")
  int segments = 4;

  @Option(names = "--lookups", description = "Timed lookups (default: ${DEFAULT-VALUE}).")
  int lookups = 2_000_000;

  @Option(names = "--json", description = "Also print the figures as one JSON line, last.")
  boolean json;

  @Override
  public Integer call() throws Exception {
    PrintStream progress = System.err;
    progress.printf("building %d disjoint random segments over %,d users ...%n", segments, users);
    List<UserIds> sets = new ArrayList<>();
    for (int i = 0; i < segments; i++) {
      sets.add(new UserIds());
    }
    // Every user in one segment, chosen at random: the densest and least compressible split.
    SplittableRandom random = new SplittableRandom(42);
    for (long u = 0; u < users; u++) {
      sets.get(random.nextInt(segments)).add(u);
    }
    long roaringBytes = 0;
    for (UserIds s : sets) {
      s.optimize();
      roaringBytes += s.toPortableBytes().length;
    }

    Long bloomBytes = null;
    try {
      long b = 0;
      for (UserIds s : sets) {
        b += BloomPeer.bytes(s.cardinality(), 1e-7);
      }
      bloomBytes = b;
    } catch (NoClassDefFoundError e) {
      progress.println("Guava is not on the classpath (run through bin/sendcap bench): no Bloom");
    }

    List<String> names = new ArrayList<>();
    for (int i = 0; i < segments; i++) {
      names.add("s" + i);
    }
    long loadMs;
    SegmentRegistry loaded;
    progress.println("publishing to an embedded broker and loading back ...");
    try (EmbeddedKafka kafka = EmbeddedKafka.start(null)) {
      Properties client = new Properties();
      client.setProperty("bootstrap.servers", kafka.bootstrapServers());
      SegmentTopic topic = new SegmentTopic(client, "segments");
      for (int i = 0; i < segments; i++) {
        topic.publish(names.get(i), sets.get(i), SegmentTopic.DEFAULT_CHUNK_BYTES, progress);
      }
      long start = System.nanoTime();
      loaded = topic.read(names).registry();
      loadMs = (System.nanoTime() - start) / 1_000_000;
    }
    for (int i = 0; i < segments; i++) {
      if (!loaded.loaded().get(names.get(i)).ids().equals(sets.get(i))) {
        throw new IllegalStateException("segment " + names.get(i) + " came back different");
      }
    }

    progress.printf("timing %,d lookups ...%n", lookups);
    long[] nanos = new long[lookups];
    SplittableRandom probe = new SplittableRandom(7);
    int found = 0;
    for (int round = 0; round < 2; round++) { // the first round warms up the JIT
      for (int i = 0; i < lookups; i++) {
        long u = probe.nextLong(users);
        long t0 = System.nanoTime();
        String s = loaded.segmentOf(u);
        nanos[i] = System.nanoTime() - t0;
        found += s == null ? 0 : 1;
      }
    }
    Arrays.sort(nanos);
    long median = nanos[lookups / 2];
    long p99 = nanos[(int) (lookups * 0.99)];

    PrintWriter out = spec.commandLine().getOut();
    out.printf("%nsegments: %d disjoint random segments over %,d users%n", segments, users);
    out.printf("%-44s %,16d%n", "roaring bitmaps, bytes (portable format)", roaringBytes);
    out.printf(
        "%-44s %16s%n",
        "Guava Bloom filters at 1e-7, bytes",
        bloomBytes == null ? "not measured" : String.format("%,d", bloomBytes));
    out.printf("%-44s %,16d%n", "lookup median, ns (incl. nanoTime)", median);
    out.printf("%-44s %,16d%n", "lookup p99, ns", p99);
    out.printf("%-44s %,16d%n", "load from the topic, ms", loadMs);
    out.printf("%-44s %,16d%n", "users found in a segment (of lookups)", found / 2);
    out.println();
    out.printf("%-44s %16.1f  target <= 140 (at 270M users)%n", "roaring MB", roaringBytes / 1e6);
    if (bloomBytes != null) {
      out.printf("%-44s %16.1f%n", "Bloom / roaring", (double) bloomBytes / roaringBytes);
    }
    out.printf("%-44s %16d  target <= 1000%n", "lookup median ns", median);
    if (json) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("roaring_bytes", roaringBytes);
      m.put("bloom_bytes", bloomBytes);
      m.put("lookup_median_ns", median);
      m.put("lookup_p99_ns", p99);
      m.put("load_ms", loadMs);
      out.println(new ObjectMapper().writeValueAsString(m));
    }
    out.flush();
    return 0;
  }
}
