package io.sendcap.segment;

import static io.sendcap.testing.Generators.lists;
import static io.sendcap.testing.Generators.longs;
import static io.sendcap.testing.Generators.sizes;
import static org.assertj.core.api.Assertions.assertThat;
import static org.quicktheories.QuickTheory.qt;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class UserIdsProperties {
  /** Ids clustered around the 2^32 boundary, where the 32-bit and 64-bit bitmaps meet. */
  private static final long BOUNDARY = 1L << 32;

  /**
   * Examples to run: QuickTheories counts an input it skips as already tried (its first two, the
   * simplest and the smallest, are often the same) among its examples, hence a tenth more than the
   * 1000 tries the property had.
   */
  private static final int TRIES = 1_100;

  @Test
  void membershipEqualsThatOfASet() {
    qt().withExamples(TRIES)
        .forAll(
            lists(longs(-2_000, 2_000), sizes(0, 300, TRIES), 0),
            lists(longs(0, Long.MAX_VALUE), sizes(0, 50, TRIES), 0),
            longs(-3_000, 3_000))
        .checkAssert(UserIdsProperties::membershipEqualsThatOfASet);
  }

  private static void membershipEqualsThatOfASet(
      List<Long> offsets, List<Long> anywhere, long probe) {
    Set<Long> model = new HashSet<>();
    UserIds ids = new UserIds();
    for (long offset : offsets) {
      long id = BOUNDARY + offset;
      model.add(id);
      ids.add(id);
    }
    anywhere.forEach(
        id -> {
          model.add(id);
          ids.add(id);
        });
    ids.optimize();

    assertThat(ids.cardinality()).isEqualTo(model.size());
    for (long id : model) {
      assertThat(ids.contains(id)).isTrue();
    }
    long probed = BOUNDARY + probe;
    assertThat(ids.contains(probed)).isEqualTo(model.contains(probed));
    assertThat(ids.contains(probe)).isEqualTo(model.contains(probe));
    List<Long> listed = new java.util.ArrayList<>();
    ids.forEach(listed::add);
    assertThat(listed).containsExactlyElementsOf(model.stream().sorted().toList());
  }
}
