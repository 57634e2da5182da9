package io.sendcap.limit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sendcap.avro.Channel;
import java.security.MessageDigest;
import org.junit.jupiter.api.Test;

class MessageIdsTest {
  /**
   * The member format is what every log written so far holds: a send's channel code (ordinal + 1)
   * in the top 3 bits, then the first 37 bits of the SHA-256 of its UTF-8 message id. The expected
   * bytes were computed apart from sendcap (Python's hashlib), so a change of hash or layout, which
   * would make replays of logged sends count twice after an upgrade, fails here.
   */
  @Test
  void aMemberIsTheChannelCodeAndTheFirst37BitsOfTheMessageIdsSha256() {
    MessageDigest sha256 = MessageIds.borrowDigest();
    try {
      assertThat(MessageIds.member("demo-1", Channel.EMAIL, sha256))
          .containsExactly(43, 1, -61, 68, -37);
      assertThat(MessageIds.member("m-42", Channel.PUSH, sha256))
          .containsExactly(67, -75, -96, -42, 36);
    } finally {
      MessageIds.giveBack(sha256);
    }
  }

  /**
   * The digest given back last is the next one lent, to whatever thread borrows next; two borrowers
   * at once get two digests, which give the same members.
   */
  @Test
  void digestsAreLentOneAtATimeAndKeptForTheNextBorrower() throws InterruptedException {
    MessageDigest first = MessageIds.borrowDigest();
    MessageDigest second = MessageIds.borrowDigest();
    assertThat(second).isNotSameAs(first);
    assertThat(MessageIds.member("demo-1", Channel.EMAIL, second))
        .isEqualTo(MessageIds.member("demo-1", Channel.EMAIL, first));
    MessageIds.giveBack(first);
    MessageIds.giveBack(second);

    MessageDigest[] lent = new MessageDigest[1];
    Thread later = new Thread(() -> lent[0] = MessageIds.borrowDigest());
    later.start();
    later.join();
    assertThat(lent[0]).isSameAs(second);
    MessageIds.giveBack(lent[0]);
  }
}
