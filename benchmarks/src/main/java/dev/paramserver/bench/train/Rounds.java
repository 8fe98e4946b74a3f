package dev.paramserver.bench.train;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The order the training section runs its jobs in, and how it folds rounds into one figure. A round
 * runs the first distributed setup, then the single-JVM baseline, then the other setups, so that a
 * change of machine load between rounds hits a round's baseline and its distributed jobs alike and
 * every repeated setup's ratio is taken against the baseline measured in its own round: right after
 * the first setup and right before the second. Setups measured once run in the last round only,
 * after the others. Each ratio is then the median of its rounds' ratios.
 */
final class Rounds {
  private Rounds() {}

  /** A distributed setup: pservers + trainers. */
  record Shape(int pservers, int trainers) {
    /** As in the ratio names: {@code 2x2}. */
    String id() {
      return pservers + "x" + trainers;
    }

    @Override
    public String toString() {
      return pservers + " + " + trainers;
    }
  }

  /** One run of the schedule: the baseline ({@code shape} null) or a distributed job. */
  record Run(int round, Shape shape) {
    boolean baseline() {
      return shape == null;
    }
  }

  /**
   * The interleaved order of {@code rounds} rounds: per round the first of {@code repeated}, the
   * baseline, the rest of {@code repeated}; the last round then also runs each of {@code once}.
   */
  static List<Run> schedule(List<Shape> repeated, List<Shape> once, int rounds) {
    if (rounds < 1 || repeated.isEmpty()) {
      throw new IllegalArgumentException(
          "a schedule needs at least one round and one repeated setup, got "
              + rounds
              + " rounds of "
              + repeated);
    }
    List<Run> runs = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      runs.add(new Run(r, repeated.get(0)));
      runs.add(new Run(r, null));
      for (Shape s : repeated.subList(1, repeated.size())) {
        runs.add(new Run(r, s));
      }
      if (r == rounds - 1) {
        for (Shape s : once) {
          runs.add(new Run(r, s));
        }
      }
    }
    return runs;
  }

  /** A distributed run's result and its round's baseline. */
  record Paired<T>(int round, T job, T single) {}

  /**
   * Pairs each distributed run of {@code results} (in their order) with the baseline of its round,
   * per setup in the order the setups first ran.
   *
   * @throws IllegalArgumentException when a round with a distributed run has no baseline
   */
  static <T> Map<Shape, List<Paired<T>>> pair(Map<Run, T> results) {
    Map<Integer, T> singles = new HashMap<>();
    results.forEach(
        (run, r) -> {
          if (run.baseline()) {
            singles.put(run.round(), r);
          }
        });
    Map<Shape, List<Paired<T>>> paired = new LinkedHashMap<>();
    results.forEach(
        (run, r) -> {
          if (run.baseline()) {
            return;
          }
          T single = singles.get(run.round());
          if (single == null) {
            throw new IllegalArgumentException(
                "round " + run.round() + " ran " + run.shape() + " without a baseline");
          }
          paired
              .computeIfAbsent(run.shape(), k -> new ArrayList<>())
              .add(new Paired<>(run.round(), r, single));
        });
    return paired;
  }

  /**
   * The median of the values that are numbers (the mean of the middle two for an even count); NaN
   * when none is.
   */
  static double median(double... values) {
    double[] v = Arrays.stream(values).filter(d -> !Double.isNaN(d)).sorted().toArray();
    if (v.length == 0) {
      return Double.NaN;
    }
    int mid = v.length / 2;
    return v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
  }

  /** The median of {@code values}, see {@link #median(double...)}. */
  static double median(List<Double> values) {
    return median(values.stream().mapToDouble(Double::doubleValue).toArray());
  }
}
