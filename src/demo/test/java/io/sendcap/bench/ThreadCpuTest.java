package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

class ThreadCpuTest {
  private static final String APP = "sendcap-bench";
  private static final String CLIENT = APP + "-6f1c2a9e-3b4d-4e5f-8a9b-0c1d2e3f4a5b";

  @Test
  void theApplicationsThreadsAreKnownByItsIdAndLettucesByTheirPrefix() {
    assertThat(ThreadCpu.shareOf(CLIENT + "-StreamThread-1", APP))
        .isEqualTo(ThreadCpu.Share.STREAM_THREADS);
    assertThat(
            ThreadCpu.shareOf(
                "kafka-producer-network-thread | " + CLIENT + "-StreamThread-1-producer", APP))
        .isEqualTo(ThreadCpu.Share.OTHER_APP_THREADS);
    assertThat(ThreadCpu.shareOf("kafka-coordinator-heartbeat-thread | " + APP, APP))
        .isEqualTo(ThreadCpu.Share.OTHER_APP_THREADS);
    assertThat(ThreadCpu.shareOf(CLIENT + "-GlobalStreamThread", APP))
        .isEqualTo(ThreadCpu.Share.OTHER_APP_THREADS);
    assertThat(ThreadCpu.shareOf("lettuce-nioEventLoop-4-1", APP))
        .isEqualTo(ThreadCpu.Share.REDIS_CLIENT);
  }

  @Test
  void theBrokerTheBlastAndAnotherApplicationAreNotTheApplication() {
    assertThat(ThreadCpu.shareOf("data-plane-kafka-request-handler-0", APP))
        .isEqualTo(ThreadCpu.Share.REST);
    assertThat(ThreadCpu.shareOf("kafka-producer-network-thread | producer-1", APP))
        .isEqualTo(ThreadCpu.Share.REST);
    assertThat(ThreadCpu.shareOf("other-app-1-StreamThread-1", APP))
        .isEqualTo(ThreadCpu.Share.REST);
  }

  @Test
  void aStatLineGivesUserPlusSystemTimeEvenWhenTheNameHoldsSpacesAndParentheses() {
    String stat =
        "4242 (C2 Compiler) x) S 1 4200 4200 0 -1 1077936192 0 0 0 0 250 17 0 0 20 0 40 0 123"
            + " 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0";
    assertThat(ThreadCpu.ticks(stat)).isEqualTo((250 + 17) * 10_000_000L);
  }

  @Test
  void aStatLineGivesItsMinorFaultsEvenWhenTheNameHoldsSpacesAndParentheses() {
    String stat =
        "4242 (java (x) y) S 1 4200 4200 0 -1 1077936192 5150 3 2 1 250 17 0 0 20 0 40 0 123"
            + " 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 -1 1 0 0 0 0 0";
    assertThat(ThreadCpu.minorFaults(stat)).isEqualTo(5150);
  }

  @Test
  void aSnapshotCountsThePageFaultsOfMemoryTouchedForTheFirstTime() {
    ThreadCpu start = ThreadCpu.snapshot();
    // 64 MiB outside the heap, zeroed when allocated: at least one fault per 2 MiB page, even
    // where the kernel backs it with transparent huge pages
    ByteBuffer fresh = ByteBuffer.allocateDirect(64 << 20);
    long faults = ThreadCpu.snapshot().minorFaultsSince(start);

    assertThat(fresh.capacity()).isEqualTo(64 << 20);
    assertThat(faults).isGreaterThanOrEqualTo(32);
  }

  @Test
  void aSnapshotCountsTheCpuThisThreadSpends() {
    ThreadCpu start = ThreadCpu.snapshot();
    long sum = 0;
    for (long i = 0; i < 200_000_000L; i++) {
      sum += i ^ (sum >>> 3);
    }
    ThreadCpu end = ThreadCpu.snapshot();
    assertThat(sum).isNotZero();
    assertThat(end.processCpuNanos()).isGreaterThan(start.processCpuNanos());
    // this thread is no application's: its time is in the rest, which is never negative
    assertThat(end.since(start, APP).get(ThreadCpu.Share.REST)).isPositive();
  }
}
