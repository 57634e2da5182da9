package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
  void segmentFilesAreReadInThePoliciesOrder(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("a.ids"), "1\n2\n");
    Files.writeString(dir.resolve("b.ids"), "2\n3\n4294967296\n");
    RoaringSegmentIndex index = SegmentFiles.load(dir, List.of("b", "a"));
    assertThat(index.segmentOf(2)).isEqualTo("b");
    assertThat(index.segmentOf(1)).isEqualTo("a");
    assertThat(index.segmentOf(4294967296L)).isEqualTo("b");
    assertThat(index.segments().get("b").cardinality()).isEqualTo(3);
  }

  @Test
  void aBadLineIsReportedWithItsNumberAndMissingFilesByName(@TempDir Path dir) throws IOException {
    Files.writeString(dir.resolve("a.ids"), "1\nuser_id\n");
    assertThatThrownBy(() -> SegmentFiles.load(dir, List.of("a")))
        .hasMessageContaining("a.ids:2: \"user_id\" is not a user id");
    assertThatThrownBy(() -> SegmentFiles.load(dir, List.of("a", "x", "y")))
        .hasMessageContaining("no file for segment(s) [x, y]");
  }
}
