package dev.paramserver.master.tracking;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.LossWindow;
import java.util.List;
import org.junit.jupiter.api.Test;

class LossSeriesTest {
  private static LossWindow window(long records, double meanLoss, int batches, long endedMs) {
    return LossWindow.newBuilder()
        .setRecords(records)
        .setLossSum(meanLoss * records)
        .setBatches(batches)
        .setEndedMs(endedMs)
        .build();
  }

  @Test
  void aPointIsMadeEachTimeTheJobsRecordsPassTheNextMultiple_withTheMeanLossSinceTheLast() {
    LossSeries s = new LossSeries(1000);
    s.add(List.of(window(600, 1.0, 6, 1), window(600, 0.5, 6, 2)));
    s.add(List.of(window(300, 0.25, 3, 3)));
    assertThat(s.drain()).containsExactly(new LossSeries.Point(1200, 0.75, 1200, 12, 2));
    s.add(List.of(window(500, 0.5, 5, 4), window(100, 0.75, 1, 5)));
    // 300 * 0.25 + 500 * 0.5 over 800 records, at 2000 (the 100 after it wait for the next)
    assertThat(s.drain()).containsExactly(new LossSeries.Point(2000, 0.40625, 800, 8, 4));
    assertThat(s.drain()).isEmpty();
  }

  @Test
  void oneBigWindowMakesOnePoint_andTheStepsStayOnePerInterval() {
    LossSeries s = new LossSeries(100);
    s.add(List.of(window(350, 0.3, 5, 1), window(20, 0.3, 1, 2), window(90, 0.3, 2, 3)));
    List<LossSeries.Point> points = s.drain();
    assertThat(points).extracting(LossSeries.Point::samples).containsExactly(350L, 460L);
  }

  @Test
  void rebase_liftsTheCountToTheJobsRecords_neverLowersIt_andDropsWhatWasNotWritten() {
    LossSeries s = new LossSeries(1000);
    s.rebase(5500); // a new leader: the job trained 5500 records under the one before
    s.add(List.of(window(600, 0.1, 6, 1)));
    assertThat(s.drain()).extracting(LossSeries.Point::samples).containsExactly(6100L);
    s.rebase(3000);
    s.add(List.of(window(1000, 0.1, 6, 1)));
    assertThat(s.drain()).extracting(LossSeries.Point::samples).containsExactly(7100L);
    // leading again after another leader went on: what was not written yet is dropped
    s.add(List.of(window(1000, 0.1, 6, 1), window(400, 0.1, 6, 1)));
    s.rebase(20_000);
    s.add(List.of(window(1000, 0.5, 7, 2)));
    assertThat(s.drain()).containsExactly(new LossSeries.Point(21_000, 0.5, 1000, 7, 2));
  }

  @Test
  void aWindowWithANonFiniteLossCountsItsRecordsButNotItsLoss() {
    LossSeries s = new LossSeries(100);
    s.add(
        List.of(
            LossWindow.newBuilder().setRecords(80).setLossSum(Double.NaN).build(),
            window(40, 0.5, 1, 9)));
    assertThat(s.drain()).containsExactly(new LossSeries.Point(120, 0.5, 40, 1, 9));
  }

  @Test
  void windowsOfNoOrAbsurdlyManyRecordsAreIgnored() {
    LossSeries s = new LossSeries(100);
    s.add(
        List.of(
            LossWindow.newBuilder().setRecords(-5).setLossSum(1).build(), // uint64 2^64 - 5
            LossWindow.newBuilder().setRecords(LossSeries.MAX_WINDOW_RECORDS + 1).build(),
            window(0, 0.5, 0, 1),
            window(100, 0.5, 2, 2)));
    assertThat(s.drain()).containsExactly(new LossSeries.Point(100, 0.5, 100, 2, 2));
  }

  @Test
  void anIntervalBelowOneIsRefused() {
    assertThatThrownBy(() -> new LossSeries(0)).hasMessageContaining(">= 1");
  }
}
