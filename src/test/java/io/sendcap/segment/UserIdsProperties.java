package io.sendcap.segment;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

class UserIdsProperties {
  /** Ids clustered around the 2^32 boundary, where the 32-bit and 64-bit bitmaps meet. */
  private static final long BOUNDARY = 1L << 32;

  @Property
  void membershipEqualsThatOfASet(
      @ForAll @Size(max = 300) List<@LongRange(min = -2_000, max = 2_000) Long> offsets,
      @ForAll @Size(max = 50) List<@LongRange(min = 0, max = Long.MAX_VALUE) Long> anywhere,
      @ForAll @LongRange(min = -3_000, max = 3_000) long probe) {
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
