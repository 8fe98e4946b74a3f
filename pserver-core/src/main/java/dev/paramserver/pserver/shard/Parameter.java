package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;

/** A validated parameter definition: a dense parameter cut into blocks, or a sparse table. */
final class Parameter {
  final ParameterSpec spec;
  final ParameterOptimizer optimizer;
  final long elements;
  final int blockSize;
  final int blockCount;
  final long rows;
  final int width;

  private Parameter(
      ParameterSpec spec,
      ParameterOptimizer optimizer,
      long elements,
      int blockSize,
      long rows,
      int width) {
    this.spec = spec;
    this.optimizer = optimizer;
    this.elements = elements;
    this.blockSize = blockSize;
    this.blockCount = spec.getSparse() ? 0 : BlockLayout.blockCount(elements, blockSize);
    this.rows = rows;
    this.width = width;
  }

  /** Validates a definition sent by a trainer. */
  static Parameter of(ParameterSpec spec) {
    String name = spec.getName();
    if (name.isEmpty()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "a parameter definition has an empty name: name every parameter");
    }
    if (spec.getDtype() != DataType.FLOAT32) {
      throw new ServiceException(
          ErrorReason.UNSUPPORTED_DTYPE,
          "parameter '"
              + name
              + "' has dtype "
              + spec.getDtype()
              + ": parameter servers store FLOAT32 only");
    }
    if (spec.getShapeCount() == 0) {
      throw new ServiceException(
          ErrorReason.SHAPE_MISMATCH,
          "parameter '" + name + "' has an empty shape: give its dimensions");
    }
    // a bad configuration throws InvalidOptimizerException, a ServiceException (BAD_OPTIMIZER)
    ParameterOptimizer optimizer = ParameterOptimizer.of(name, spec.getOptimizer());
    if (spec.getSparse()) {
      if (spec.getShapeCount() != 2
          || spec.getShape(0) < 0
          || spec.getShape(1) <= 0
          || spec.getShape(1) > Integer.MAX_VALUE / 8) {
        throw new ServiceException(
            ErrorReason.SHAPE_MISMATCH,
            "sparse table '"
                + name
                + "' has shape "
                + spec.getShapeList()
                + ": expected [rows or 0, width] with width > 0");
      }
      if (!(spec.getInitStddev() >= 0) || !Float.isFinite(spec.getInitStddev())) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "sparse table '" + name + "' has init_stddev " + spec.getInitStddev() + ": use >= 0");
      }
      return new Parameter(spec, optimizer, 0, 0, spec.getShape(0), (int) spec.getShape(1));
    }
    long elements;
    try {
      elements = BlockLayout.elements(spec.getShapeList());
    } catch (IllegalArgumentException | ArithmeticException e) {
      throw new ServiceException(
          ErrorReason.SHAPE_MISMATCH,
          "parameter '"
              + name
              + "' has shape "
              + spec.getShapeList()
              + ": every dimension must be > 0");
    }
    int blockSize = spec.getBlockSize() == 0 ? BlockLayout.DEFAULT_BLOCK_SIZE : spec.getBlockSize();
    // block_size is a uint32: 2^31 and more arrive as negative ints
    if (Integer.toUnsignedLong(spec.getBlockSize()) > (1 << 26)) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "parameter '"
              + name
              + "' has block_size "
              + Integer.toUnsignedString(spec.getBlockSize())
              + ": blocks of at most 67108864 elements");
    }
    return new Parameter(spec, optimizer, elements, blockSize, 0, 0);
  }

  String name() {
    return spec.getName();
  }

  boolean sparse() {
    return spec.getSparse();
  }

  /** Element count of block {@code b}. */
  int blockLength(int b) {
    long offset = (long) b * blockSize;
    return (int) Math.min(blockSize, elements - offset);
  }
}
