package dev.paramserver.models;

import java.util.List;

/**
 * A named parameter of a model.
 *
 * @param name unique within the model, for example "fc1.w"
 * @param shape dimensions, outermost first; for a sparse table {@code [0, width]} (rows unbounded)
 * @param init how the initial values are drawn
 * @param sparse true for a row table whose rows are created on first use
 */
public record ParameterDef(String name, List<Long> shape, Init init, boolean sparse) {

  /** How to fill a new parameter. */
  public sealed interface Init {}

  /** All zeros. */
  public record Zeros() implements Init {}

  /** Normal with mean 0 and the given standard deviation. */
  public record Normal(float stddev) implements Init {}

  /** Uniform in [-limit, limit]. */
  public record Uniform(float limit) implements Init {}

  public static ParameterDef dense(String name, List<Long> shape, Init init) {
    return new ParameterDef(name, List.copyOf(shape), init, false);
  }

  public static ParameterDef sparseTable(String name, int width, float stddev) {
    return new ParameterDef(name, List.of(0L, (long) width), new Normal(stddev), true);
  }

  /** Element count of a dense parameter. */
  public long elements() {
    long n = 1;
    for (long d : shape) {
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  /** Row width of a sparse table. */
  public int width() {
    return (int) (long) shape.get(shape.size() - 1);
  }
}
