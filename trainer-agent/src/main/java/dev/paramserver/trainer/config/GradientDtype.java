package dev.paramserver.trainer.config;

import dev.paramserver.proto.v1.DataType;

/** Element type of gradients on the wire ({@code paramserver.trainer.gradient-dtype}). */
public enum GradientDtype {
  FLOAT32(DataType.FLOAT32),
  FLOAT16(DataType.FLOAT16),
  BFLOAT16(DataType.BFLOAT16);

  private final DataType wire;

  GradientDtype(DataType wire) {
    this.wire = wire;
  }

  public DataType wireType() {
    return wire;
  }
}
