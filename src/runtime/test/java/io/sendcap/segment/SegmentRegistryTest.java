package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SegmentRegistryTest {
  private final SegmentRegistry registry = new SegmentRegistry(List.of("new-users", "active"));
  private final List<SegmentLoader.Reason> reasons = new ArrayList<>();
  private final SegmentLoader loader = new SegmentLoader(registry, 1 << 20, reasons::add);
  private final Map<String, byte[]> store = new HashMap<>();
  private final SegmentLoader.ChunkStore chunks = SegmentLoader.ChunkStore.of(store);

  private static UserIds ids(long... values) {
    UserIds set = new UserIds();
    for (long v : values) {
      set.add(v);
    }
    return set;
  }

  private void deliver(List<SegmentRecords.Entry> entries) {
    for (SegmentRecords.Entry e : entries) {
      loader.onRecord(e.key(), e.value(), chunks);
    }
  }

  @Test
  void aVersionIsUsedOnlyOnceItsManifestHasArrived() {
    List<SegmentRecords.Entry> v1 = SegmentRecords.publish("active", 1, ids(1, 2, 3), 1024, 0);
    deliver(v1.subList(0, v1.size() - 1));
    assertThat(registry.segmentOf(1)).isNull();
    deliver(v1.subList(v1.size() - 1, v1.size()));
    assertThat(registry.segmentOf(1)).isEqualTo("active");
    assertThat(store).as("chunks leave the store once assembled").isEmpty();
  }

  @Test
  void aHalfPublishedVersionIsNeverUsedAndAnOlderOneNeverReplacesANewerOne() {
    UserIds big = new UserIds();
    for (long u = 0; u < 200_000; u += 3) {
      big.add(u);
    }
    deliver(SegmentRecords.publish("active", 2, big, 1024, 0));
    List<SegmentRecords.Entry> v3 = SegmentRecords.publish("active", 3, ids(1), 1024, 0);
    assertThat(v3).hasSizeGreaterThan(1);
    deliver(v3.subList(0, v3.size() - 1)); // the publisher died before the manifest
    assertThat(registry.version("active")).isEqualTo(2);
    assertThat(registry.segmentOf(3)).isEqualTo("active");

    deliver(SegmentRecords.publish("active", 1, ids(4), 1024, 0));
    assertThat(registry.version("active")).isEqualTo(2);
    assertThat(registry.segmentOf(4)).isNull();
  }

  @Test
  void lookupsFollowThePriorityOrderAndCorruptChunksAreRejected() {
    deliver(SegmentRecords.publish("active", 1, ids(1, 2), 1024, 0));
    deliver(SegmentRecords.publish("new-users", 1, ids(2, 5_000_000_000L), 1024, 0));
    assertThat(registry.segmentOf(2)).isEqualTo("new-users");
    assertThat(registry.segmentOf(5_000_000_000L)).isEqualTo("new-users");
    assertThat(registry.segmentOf(1)).isEqualTo("active");

    List<SegmentRecords.Entry> bad = SegmentRecords.publish("active", 2, ids(9), 1024, 0);
    byte[] chunk = bad.get(0).value().clone();
    chunk[chunk.length - 1] ^= 1;
    deliver(List.of(new SegmentRecords.Entry(bad.get(0).key(), chunk), bad.get(1)));
    assertThat(loader.rejected()).isEqualTo(1);
    assertThat(registry.version("active")).isEqualTo(1);
  }

  @Test
  void chunksThatMatchTheirManifestButHoldNoBitmapAreRejectedAsUnreadable() {
    List<SegmentRecords.Entry> real = SegmentRecords.publish("active", 1, ids(1), 1024, 0);
    byte[] garbage = "not a bitmap at all".getBytes(StandardCharsets.UTF_8);
    SegmentRecords.Manifest claimed = SegmentRecords.Manifest.fromJson(real.get(1).value());
    SegmentRecords.Manifest lying =
        new SegmentRecords.Manifest(
            "active", 1, 1, garbage.length, sha256(garbage), 1, claimed.publishedAt());
    deliver(
        List.of(
            new SegmentRecords.Entry("active/1/0", garbage),
            new SegmentRecords.Entry("active", lying.toJson())));

    assertThat(reasons).containsExactly(SegmentLoader.Reason.UNREADABLE);
    assertThat(registry.version("active")).isZero();
  }

  @Test
  void chunksWaitingForAManifestHoldAtMostTheBoundAndLeaveWithTheirVersion() {
    SegmentLoader small = new SegmentLoader(registry, 10, reasons::add);
    small.onRecord("active/2/0", new byte[6], chunks);
    small.onRecord("active/2/1", new byte[6], chunks);
    assertThat(reasons).containsExactly(SegmentLoader.Reason.TOO_LARGE);
    assertThat(small.waitingBytes()).isEqualTo(6);

    small.onRecord("active/2/0", null, chunks);
    assertThat(small.waitingBytes()).isZero();
    assertThat(store).isEmpty();
  }

  @Test
  void chunksOfAVersionNoNewerThanTheOneInForceAreNotKept() {
    deliver(SegmentRecords.publish("active", 3, ids(1), 1024, 0));
    loader.onRecord("active/2/0", new byte[100], chunks);
    loader.onRecord("active/3/0", new byte[100], chunks);

    assertThat(store).isEmpty();
    assertThat(loader.waitingBytes()).isZero();
    assertThat(reasons).isEmpty();
  }

  @Test
  void chunksOfAnOlderPendingVersionLeaveWhenANewerOneIsInstalled() {
    List<SegmentRecords.Entry> v2 = SegmentRecords.publish("active", 2, ids(1), 1024, 0);
    deliver(v2.subList(0, v2.size() - 1)); // the publisher died before the manifest
    assertThat(loader.waitingBytes()).isPositive();
    deliver(SegmentRecords.publish("active", 3, ids(2), 1024, 0));

    assertThat(registry.version("active")).isEqualTo(3);
    assertThat(store).isEmpty();
    assertThat(loader.waitingBytes()).isZero();
  }

  private static String sha256(byte[] bytes) {
    try {
      return java.util.HexFormat.of()
          .formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  @Test
  void segmentNamesMustBeUsableAsKeys() {
    assertThatThrownBy(() -> SegmentRecords.requireName("a/b")).hasMessageContaining("without '/'");
    assertThatThrownBy(() -> SegmentRecords.requireName("")).hasMessageContaining("non-empty");
  }
}
