package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.bench.train.Rounds.Paired;
import dev.paramserver.bench.train.Rounds.Run;
import dev.paramserver.bench.train.Rounds.Shape;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RoundsTest {
  private static final Shape ONE = new Shape(1, 1);
  private static final Shape TWO = new Shape(2, 2);
  private static final Shape FOUR = new Shape(4, 4);

  @Test
  void schedule_interleavesEachRoundsBaselineBetweenItsTwoSetups() {
    List<Run> runs = Rounds.schedule(List.of(ONE, TWO), List.of(), 3);

    assertThat(runs)
        .containsExactly(
            new Run(0, ONE),
            new Run(0, null),
            new Run(0, TWO),
            new Run(1, ONE),
            new Run(1, null),
            new Run(1, TWO),
            new Run(2, ONE),
            new Run(2, null),
            new Run(2, TWO));
  }

  @Test
  void schedule_runsTheOnceSetupsOnlyAtTheEndOfTheLastRound() {
    List<Run> runs = Rounds.schedule(List.of(ONE, TWO), List.of(FOUR), 3);

    assertThat(runs).hasSize(10).last().isEqualTo(new Run(2, FOUR));
    assertThat(runs.stream().filter(r -> FOUR.equals(r.shape()))).hasSize(1);
    assertThat(runs.stream().filter(Run::baseline)).hasSize(3);
  }

  @Test
  void schedule_everyRepeatedRunIsNextToItsRoundsBaseline() {
    List<Run> runs = Rounds.schedule(List.of(ONE, TWO), List.of(FOUR), 3);

    for (int i = 0; i < runs.size(); i++) {
      Run r = runs.get(i);
      if (r.baseline() || r.shape().equals(FOUR)) {
        continue;
      }
      boolean before = i > 0 && runs.get(i - 1).equals(new Run(r.round(), null));
      boolean after = i + 1 < runs.size() && runs.get(i + 1).equals(new Run(r.round(), null));
      assertThat(before || after).as("%s next to its baseline", r).isTrue();
    }
  }

  @Test
  void schedule_withOneRepeatedSetupPutsTheOnceSetupRightAfterTheLastBaseline() {
    // the quick run: 1 + 1 in every round, 2 + 2 once
    List<Run> runs = Rounds.schedule(List.of(ONE), List.of(TWO), 3);

    assertThat(runs)
        .containsExactly(
            new Run(0, ONE),
            new Run(0, null),
            new Run(1, ONE),
            new Run(1, null),
            new Run(2, ONE),
            new Run(2, null),
            new Run(2, TWO));
  }

  @Test
  void schedule_refusesNoRoundsOrNoSetups() {
    assertThatThrownBy(() -> Rounds.schedule(List.of(ONE), List.of(), 0))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Rounds.schedule(List.of(), List.of(FOUR), 3))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void pair_takesEachRunsOwnRoundsBaseline() {
    Map<Run, String> results = new LinkedHashMap<>();
    for (Run r : Rounds.schedule(List.of(ONE, TWO), List.of(FOUR), 2)) {
      results.put(r, r.baseline() ? "single" + r.round() : r.shape().id() + "/" + r.round());
    }

    Map<Shape, List<Paired<String>>> paired = Rounds.pair(results);

    assertThat(paired.keySet()).containsExactly(ONE, TWO, FOUR);
    assertThat(paired.get(ONE))
        .containsExactly(new Paired<>(0, "1x1/0", "single0"), new Paired<>(1, "1x1/1", "single1"));
    assertThat(paired.get(TWO))
        .containsExactly(new Paired<>(0, "2x2/0", "single0"), new Paired<>(1, "2x2/1", "single1"));
    assertThat(paired.get(FOUR)).containsExactly(new Paired<>(1, "4x4/1", "single1"));
  }

  @Test
  void pair_refusesARoundWithoutABaseline() {
    Map<Run, String> results = new LinkedHashMap<>();
    results.put(new Run(0, null), "single0");
    results.put(new Run(1, ONE), "1x1/1");

    assertThatThrownBy(() -> Rounds.pair(results))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("round 1");
  }

  @Test
  void median_ofAnOddCountIsTheMiddleValue() {
    assertThat(Rounds.median(0.9, 0.1, 0.5)).isEqualTo(0.5);
    assertThat(Rounds.median(List.of(3.0))).isEqualTo(3.0);
  }

  @Test
  void median_ofAnEvenCountIsTheMeanOfTheMiddleTwo() {
    assertThat(Rounds.median(4.0, 1.0, 2.0, 3.0)).isEqualTo(2.5);
  }

  @Test
  void median_skipsNaNAndIsNaNWhenNothingIsLeft() {
    assertThat(Rounds.median(Double.NaN, 2.0, 8.0, 4.0)).isEqualTo(4.0);
    assertThat(Rounds.median(Double.NaN)).isNaN();
    assertThat(Rounds.median()).isNaN();
  }

  @Test
  void median_isNotPulledByOneOutlyingRound() {
    // a round slowed by a neighbour's load is one of three: the median ignores it, a mean not
    assertThat(Rounds.median(0.80, 0.82, 0.20)).isEqualTo(0.80);
  }
}
