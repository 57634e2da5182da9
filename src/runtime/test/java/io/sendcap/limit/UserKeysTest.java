package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.cluster.SlotHash;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class UserKeysTest {
  private static String key(UserKeys keys, long userId) {
    return new String(keys.key(userId), StandardCharsets.US_ASCII);
  }

  @Test
  void withoutBucketsTheUserIdIsTheHashTag() {
    assertThat(key(new UserKeys("s", 0), 1234567L)).isEqualTo("s{1234567}");
  }

  @Test
  void withBucketsTheTagNamesTheBucketAndTheUserIdFollows() {
    UserKeys keys = new UserKeys("s", 32);
    String tag = new String(UserKeys.tag(UserKeys.bucket(42L, 32), 32), StandardCharsets.US_ASCII);
    assertThat(key(keys, 42L)).isEqualTo("s{" + tag + "}42");
  }

  @Test
  void theLayoutIsFixedForGood() {
    // changing the mix or the tag search moves every user to another key: their logs are lost
    assertThat(UserKeys.bucket(0L, 32)).isEqualTo(0);
    assertThat(key(new UserKeys("s", 32), 1L)).isEqualTo(key(new UserKeys("s", 32), 1L));
    assertThat(key(new UserKeys("s", 32), 123_456_789L)).isEqualTo("s{58}123456789");
  }

  @Test
  void usersOfOneBucketShareASlotAndBucketsSpreadEvenlyOverTheSlots() {
    int buckets = 32;
    UserKeys keys = new UserKeys("s", buckets);
    Set<Integer> slots = new HashSet<>();
    int[] perMaster = new int[3];
    for (int b = 0; b < buckets; b++) {
      int slot = SlotHash.getSlot(UserKeys.tag(b, buckets));
      assertThat(slot).isGreaterThanOrEqualTo(b * SlotHash.SLOT_COUNT / buckets);
      assertThat(slot).isLessThan((b + 1) * SlotHash.SLOT_COUNT / buckets);
      slots.add(slot);
      // the slot ranges of redis-cli --cluster create's three masters
      perMaster[slot <= 5460 ? 0 : slot <= 10922 ? 1 : 2]++;
    }
    assertThat(slots).hasSize(buckets);
    assertThat(perMaster).containsExactly(11, 10, 11);
    for (long u = 0; u < 10_000; u++) {
      int bucket = UserKeys.bucket(u, buckets);
      assertThat(SlotHash.getSlot(keys.key(u)))
          .isEqualTo(SlotHash.getSlot(UserKeys.tag(bucket, buckets)));
    }
  }

  @Test
  void usersSpreadEvenlyOverTheBuckets() {
    int buckets = 32;
    int[] users = new int[buckets];
    for (long u = 0; u < 320_000; u++) {
      users[UserKeys.bucket(u, buckets)]++;
    }
    for (int n : users) {
      assertThat(n).isBetween(9_500, 10_500);
    }
  }

  @Test
  void everyCountUpToTheMostHasDistinctTags() {
    for (int buckets : new int[] {1, 3, 32, 1000, UserKeys.MAX_BUCKETS}) {
      Set<Integer> slots = new HashSet<>();
      for (int b = 0; b < buckets; b++) {
        slots.add(SlotHash.getSlot(UserKeys.tag(b, buckets)));
      }
      assertThat(slots).hasSize(buckets);
    }
  }

  @Test
  void aCountOutsideTheRangeIsRefusedWithTheValue() {
    assertThatThrownBy(() -> new UserKeys("s", 1025)).hasMessageContaining("1025");
    assertThatThrownBy(() -> new UserKeys("s", -1)).hasMessageContaining("-1");
  }
}
