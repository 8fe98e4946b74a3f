package dev.paramserver.tensor;

import dev.paramserver.proto.v1.ParameterSpec;
import java.util.ArrayList;
import java.util.List;

/** How a dense parameter is cut into blocks of {@code blockSize} elements. */
public final class BlockLayout {
  /** Default block size: 256 Ki floats, 1 MiB on the wire. */
  public static final int DEFAULT_BLOCK_SIZE = 256 * 1024;

  private BlockLayout() {}

  /** Product of the dimensions; rejects negative or overflowing shapes. */
  public static long elements(List<Long> shape) {
    long n = 1;
    for (long d : shape) {
      if (d <= 0) {
        throw new IllegalArgumentException("shape " + shape + " has a dimension <= 0");
      }
      n = Math.multiplyExact(n, d);
    }
    return n;
  }

  public static int blockCount(long elements, int blockSize) {
    checkBlockSize(blockSize);
    return (int) ((elements + blockSize - 1) / blockSize);
  }

  /** The blocks of a parameter with {@code elements} elements. */
  public static List<BlockSpec> blocks(String name, long elements, int blockSize) {
    int count = blockCount(elements, blockSize);
    List<BlockSpec> out = new ArrayList<>(count);
    for (int b = 0; b < count; b++) {
      long offset = (long) b * blockSize;
      out.add(new BlockSpec(name, b, offset, (int) Math.min(blockSize, elements - offset)));
    }
    return out;
  }

  /**
   * The blocks of a model's dense parameters, in spec order: each cut by its {@code block_size}
   * ({@link #DEFAULT_BLOCK_SIZE} when 0, as the pservers read it). Sparse tables have no blocks.
   * The trainers and the master place these same blocks with {@link ShardPlacement#place}.
   */
  public static List<BlockSpec> denseBlocks(List<ParameterSpec> specs) {
    List<BlockSpec> out = new ArrayList<>();
    for (ParameterSpec spec : specs) {
      if (!spec.getSparse()) {
        out.addAll(blocks(spec.getName(), elements(spec.getShapeList()), blockSize(spec)));
      }
    }
    return out;
  }

  /** A dense spec's block size: its {@code block_size}, or {@link #DEFAULT_BLOCK_SIZE} when 0. */
  public static int blockSize(ParameterSpec spec) {
    return spec.getBlockSize() == 0 ? DEFAULT_BLOCK_SIZE : spec.getBlockSize();
  }

  private static void checkBlockSize(int blockSize) {
    if (blockSize <= 0) {
      throw new IllegalArgumentException("block size must be > 0 elements, got " + blockSize);
    }
  }
}
