package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.paramserver.localcluster.JobStatusView;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.ObjectMapper;

class YardstickTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * Three passes of 1,000 records over 10 s from launch at 0 ms, each leased ahead while the one
   * before ends: pass 0 from 1,000 to 4,000 ms, pass 1 from 3,500 to 7,000 (it started early), pass
   * 2 from 6,500 to 10,000.
   */
  private static JobStatusView overlapping() throws Exception {
    return new JobStatusView(
        JSON.readTree(
            """
            {"state": "FINISHED", "pass": 3, "totalPasses": 3, "passes": [
              {"pass": 0, "records": "1000", "startedMs": "1000", "endedMs": "4000"},
              {"pass": 1, "records": "1000", "startedMs": "3500", "endedMs": "7000"},
              {"pass": 2, "records": "1000", "startedMs": "6500", "endedMs": "10000"}]}
            """));
  }

  @Test
  void window_isTheRecordsFinishedAfterTheWarmUpOverTheWallTimeToTheLastTask() throws Exception {
    // the watch saw pass 0 ended at 4,100 ms with 200 records of pass 1 already done
    WarmupWatch.Mark mark = new WarmupWatch.Mark(4100, 4_100_000_000L, 1200, 200);

    Yardstick.Window w = Yardstick.of(overlapping(), mark, 0, 0);

    assertThat(w.records()).isEqualTo(1800);
    assertThat(w.seconds()).isCloseTo(5.9, within(1e-9));
    assertThat(w.rate()).isCloseTo(1800 / 5.9, within(1e-9));
    assertThat(w.aheadRecords()).isEqualTo(200);
    assertThat(w.t0Nanos()).isEqualTo(4_100_000_000L);
    assertThat(w.t1Nanos()).isEqualTo(10_000_000_000L);
  }

  @Test
  void passDurationRate_isTheOldFigureThatCountsOverlappingWallTimeTwice() throws Exception {
    // second half of 3 passes: passes 1 and 2, 2,000 records over 3.5 + 3.5 s of durations,
    // though they took 6.5 s of wall time
    assertThat(Yardstick.passDurationRate(overlapping(), 3)).isCloseTo(2000 / 7.0, within(1e-9));
  }

  @Test
  void window_withoutAMarkStartsAtTheWarmUpPassesEnd() throws Exception {
    Yardstick.Window w = Yardstick.of(overlapping(), null, 0, 0);

    assertThat(w.records()).isEqualTo(2000);
    assertThat(w.seconds()).isCloseTo(6.0, within(1e-9));
  }

  @Test
  void window_ignoresAMarkTakenAfterTheJobEnded() throws Exception {
    WarmupWatch.Mark late = new WarmupWatch.Mark(10_500, 10_500_000_000L, 3000, 2000);

    Yardstick.Window w = Yardstick.of(overlapping(), late, 0, 0);

    assertThat(w.records()).isEqualTo(2000);
    assertThat(w.seconds()).isCloseTo(6.0, within(1e-9));
  }

  @Test
  void markOf_waitsForTheWarmUpPassToEndAndCountsTheWorkLeasedAhead() throws Exception {
    JobStatusView running =
        new JobStatusView(
            JSON.readTree(
                """
                {"state": "RUNNING", "pass": 0, "passes": [
                  {"pass": 0, "records": "900", "startedMs": "1000"},
                  {"pass": 1, "records": "100", "startedMs": "3500"}]}
                """));
    assertThat(WarmupWatch.markOf(running, 3900, 1)).isNull();

    WarmupWatch.Mark m = WarmupWatch.markOf(overlapping(), 4100, 2);
    assertThat(m.records()).isEqualTo(3000);
    assertThat(m.aheadRecords()).isEqualTo(2000);
  }

  @Test
  void window_ofAOnePassJobHasNoRate() throws Exception {
    JobStatusView one =
        new JobStatusView(
            JSON.readTree(
                """
                {"state": "FINISHED", "passes": [
                  {"pass": 0, "records": "900", "startedMs": "1000", "endedMs": "2000"}]}
                """));
    assertThat(Yardstick.of(one, null, 0, 0).rate()).isNaN();
  }
}
