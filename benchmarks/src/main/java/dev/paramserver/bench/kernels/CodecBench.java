package dev.paramserver.bench.kernels;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.tensor.TensorCodec;
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
 * {@link TensorCodec} float32 encode ({@code float[]} to little-endian wire bytes, as a pull
 * answers) and decode (wire bytes into a {@code float[]}, as a push is read), against a plain copy
 * of the same number of bytes.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Thread)
public class CodecBench {
  /** Floats: one 1 MiB block (the trainer's default block) and a 16 MiB tensor. */
  @Param({"262144", "4194304"})
  public int n;

  private float[] floats;
  private float[] decoded;
  private ByteString wire;
  private byte[] src;
  private byte[] dst;

  @Setup(Level.Trial)
  public void setUp() {
    Random rnd = new Random(2);
    floats = new float[n];
    for (int i = 0; i < n; i++) {
      floats[i] = rnd.nextFloat();
    }
    decoded = new float[n];
    wire = TensorCodec.encode(floats);
    src = wire.toByteArray();
    dst = new byte[src.length];
  }

  @Benchmark
  public ByteString encode() {
    return TensorCodec.encode(floats);
  }

  @Benchmark
  public float[] decode() {
    TensorCodec.decode(wire, DataType.FLOAT32, decoded, 0);
    return decoded;
  }

  /** Copy into a fresh array, as encode must (allocation and zeroing included). */
  @Benchmark
  public byte[] memoryClone() {
    return src.clone();
  }

  /** The baseline: copy the same bytes into an existing array. */
  @Benchmark
  public byte[] memoryCopy() {
    System.arraycopy(src, 0, dst, 0, src.length);
    return dst;
  }
}
