package dev.paramserver.bench.component;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The pserver component benchmark's drivers on a few batches: what they measure is real work. */
@Timeout(60)
class PserverPushBenchTest {
  @TempDir Path dir;

  @Test
  void ctrBatches_holdDistinctIdsOfTheirRecords() {
    CtrPushes work = new CtrPushes(3);
    for (long[] ids : work.batches) {
      assertThat(ids.length).isBetween(1, CtrPushes.BATCH * 16);
      assertThat(Arrays.stream(ids).distinct().count()).isEqualTo(ids.length);
    }
    assertThat(CtrPushes.distinct(new long[] {5, 3, 5, 1, 3})).containsExactly(5, 3, 1);
  }

  @Test
  void servicePass_answersEveryPushWithItsRows_logOffAndOn() throws Exception {
    CtrPushes work = new CtrPushes(4);
    long rows = 0;
    for (int b = 0; b < 4; b++) {
      rows += work.rows(b);
    }
    try (PserverPushBench.Service off = new PserverPushBench.Service(work, null);
        PserverPushBench.Service on = new PserverPushBench.Service(work, dir)) {
      for (PserverPushBench.Service s : new PserverPushBench.Service[] {off, on}) {
        PserverPushBench.Pass first = s.pass();
        PserverPushBench.Pass second = s.pass();
        assertThat(first.rows()).isEqualTo(rows);
        assertThat(second.rows()).isEqualTo(rows);
        assertThat(second.cpuNanos()).isPositive();
        assertThat(second.pushedBytes()).isGreaterThan(rows * 4);
      }
    }
    PserverPushBench.Pass k = new PserverPushBench.Kernel(work).pass();
    assertThat(k.rows()).isEqualTo(rows);
  }
}
