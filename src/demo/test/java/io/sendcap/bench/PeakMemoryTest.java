package io.sendcap.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class PeakMemoryTest {
  @Test
  void readsVmHwmInBytes() {
    List<String> status = List.of("Name:\tjava", "VmPeak:\t 9000 kB", "VmHWM:\t  429196 kB");

    assertThat(PeakMemory.vmHwmBytes(status)).isEqualTo(429_196L * 1024);
  }

  @Test
  void aStatusWithoutVmHwmIsNotMeasured() {
    assertThat(PeakMemory.vmHwmBytes(List.of("Name:\tjava"))).isEqualTo(-1);
  }

  @Test
  void theHeapPeakOfThisJvmIsMeasured() {
    PeakMemory now = PeakMemory.now();

    assertThat(now.heapBytes()).isPositive();
  }
}
