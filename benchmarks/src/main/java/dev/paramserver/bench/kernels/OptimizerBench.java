package dev.paramserver.bench.kernels;

import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.OptimizerConfig;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * One optimizer update of {@code n} float32 parameters through the pserver's own {@link
 * ParameterOptimizer} (the code a push runs per block). {@link ArrayCopyBench} is the
 * memory-bandwidth baseline of the same run.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class OptimizerBench {
  /** Elements per update: 1 Mi and 16 Mi floats (the range). */
  @Param({"1048576", "16777216"})
  public int n;

  /** sgd, momentum or adam. */
  @Param({"sgd", "momentum", "adam"})
  public String kind;

  private ParameterOptimizer optimizer;
  private float[] w;
  private float[] g;
  private float[][] slots;
  private long updates;

  @Setup(Level.Trial)
  public void setUp() {
    OptimizerConfig.Builder c = OptimizerConfig.newBuilder().setLearningRate(1e-4f);
    switch (kind) {
      case "sgd" -> c.setKind(OptimizerConfig.Kind.SGD);
      case "momentum" -> c.setKind(OptimizerConfig.Kind.SGD).setMomentum(0.9f);
      case "adam" -> c.setKind(OptimizerConfig.Kind.ADAM);
      default -> throw new IllegalArgumentException("unknown optimizer kind " + kind);
    }
    optimizer = ParameterOptimizer.of("bench", c.build());
    Random rnd = new Random(1);
    w = new float[n];
    g = new float[n];
    for (int i = 0; i < n; i++) {
      w[i] = (float) rnd.nextGaussian();
      g[i] = (float) rnd.nextGaussian() * 1e-3f;
    }
    slots = optimizer.newSlots(n);
  }

  @Benchmark
  public float[] apply() {
    optimizer.update(w, g, 0, slots, updates++);
    return w;
  }

  /** Bytes an update touches per parameter: weights and gradient read, weights written, state. */
  public static int bytesPerParam(String kind) {
    return switch (kind) {
      case "sgd" -> 12;
      case "momentum" -> 20;
      case "adam" -> 28;
      case "copy" -> 8;
      default -> throw new IllegalArgumentException(kind);
    };
  }
}
