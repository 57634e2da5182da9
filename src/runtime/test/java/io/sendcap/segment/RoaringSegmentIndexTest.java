package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.roaringbitmap.RoaringBitmap;

class RoaringSegmentIndexTest {
  private static UserIds ids(long... values) {
    UserIds set = new UserIds();
    for (long v : values) {
      set.add(v);
    }
    return set;
  }

  @Test
  void aUserInSeveralSegmentsBelongsToTheFirstInPriorityOrder() {
    Map<String, UserIds> segments = new LinkedHashMap<>();
    segments.put("new-users", ids(1, 2));
    segments.put("active", ids(2, 3, 5_000_000_000L));
    RoaringSegmentIndex index = new RoaringSegmentIndex(segments);

    assertThat(index.segmentOf(1)).isEqualTo("new-users");
    assertThat(index.segmentOf(2)).isEqualTo("new-users");
    assertThat(index.segmentOf(3)).isEqualTo("active");
    assertThat(index.segmentOf(5_000_000_000L)).isEqualTo("active");
    assertThat(index.segmentOf(4)).isNull();
    assertThat(index.overlaps())
        .containsExactly(new RoaringSegmentIndex.Overlap("new-users", "active", 1));
  }

  @Test
  void idFilesAndPortableBitmapsReadTheSameSet(@TempDir Path dir) throws IOException {
    Path ids = dir.resolve("b.ids");
    Files.writeString(ids, "2\n3\n4294967296\n");
    UserIds fromIds = SegmentFiles.readIds(ids);
    assertThat(fromIds.cardinality()).isEqualTo(3);

    Path bitmap = dir.resolve("b.roaring");
    try (var out = Files.newOutputStream(bitmap)) {
      fromIds.writePortable(out);
    }
    assertThat(SegmentFiles.readBitmap(bitmap)).isEqualTo(fromIds);

    // A plain 32-bit portable bitmap, as any RoaringBitmap library writes it.
    Path plain = dir.resolve("plain.roaring");
    try (var out = new DataOutputStream(Files.newOutputStream(plain))) {
      RoaringBitmap.bitmapOf(7, 70_000, 2_000_000_000).serialize(out);
    }
    assertThat(SegmentFiles.readBitmap(plain)).isEqualTo(ids(7, 70_000, 2_000_000_000));

    Files.writeString(dir.resolve("junk.roaring"), "user_id\n1\n");
    assertThatThrownBy(() -> SegmentFiles.readBitmap(dir.resolve("junk.roaring")))
        .hasMessageContaining("junk.roaring: not a roaring bitmap in the portable format");
  }

  @Test
  void aHeaderOrABlankLineIsReportedWithItsNumber(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("a.ids"), "user_id\n1\n");
    assertThatThrownBy(() -> SegmentFiles.readIds(dir.resolve("a.ids")))
        .hasMessageContaining("a.ids:1: \"user_id\" is not a user id");
    Files.writeString(dir.resolve("b.ids"), "1\n2\n\n3\n");
    assertThatThrownBy(() -> SegmentFiles.readIds(dir.resolve("b.ids")))
        .hasMessageContaining("b.ids:3: \"\" is not a user id");
    assertThatThrownBy(() -> SegmentFiles.readIds(dir.resolve("c.ids")))
        .hasMessageContaining("c.ids: no such file");
  }
}
