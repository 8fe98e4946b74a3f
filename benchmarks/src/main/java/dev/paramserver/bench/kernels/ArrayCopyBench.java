package dev.paramserver.bench.kernels;

import java.util.Arrays;
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
 * The memory-bandwidth baseline of the optimizer kernels: {@code System.arraycopy} of {@code n}
 * floats, 8 bytes touched per element (one read, one write).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class ArrayCopyBench {
  @Param({"1048576", "16777216"})
  public int n;

  private float[] src;
  private float[] dst;

  @Setup(Level.Trial)
  public void setUp() {
    src = new float[n];
    dst = new float[n];
    Arrays.fill(src, 1.5f);
  }

  @Benchmark
  public float[] arrayCopy() {
    System.arraycopy(src, 0, dst, 0, n);
    return dst;
  }
}
