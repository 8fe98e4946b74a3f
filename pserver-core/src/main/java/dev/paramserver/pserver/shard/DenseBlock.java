package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.tensor.TensorCodec;

/**
 * One dense block with its optimizer state. Every read and write of {@code values}, {@code slots}
 * and {@code updates} holds the block's monitor, so concurrent pushes never lose an update.
 */
final class DenseBlock {
  final Parameter parameter;
  final int block;
  final long offset;
  final float[] values;
  final float[][] slots;
  long updates;

  DenseBlock(Parameter parameter, int block, float[] values) {
    this.parameter = parameter;
    this.block = block;
    this.offset = (long) block * parameter.blockSize;
    this.values = values;
    this.slots = parameter.optimizer.newSlots(values.length);
  }

  String name() {
    return parameter.name();
  }

  /** Applies a validated gradient of {@code values.length} elements. */
  synchronized void apply(float[] g) {
    ParameterOptimizer opt = parameter.optimizer;
    opt.update(values, g, 0, slots, updates);
    updates++;
  }

  /** The values as FLOAT32 wire bytes (one copy, made under the block's lock). */
  synchronized ByteString encode() {
    return TensorCodec.encode(values);
  }

  /** {@link #encode} into {@code into} (at least {@code 4 * values.length} bytes): a view of it. */
  synchronized ByteString encodeInto(byte[] into) {
    return TensorCodec.encodeInto(values, 0, values.length, into);
  }

  synchronized float[] copyValues() {
    return values.clone();
  }

  static String key(String name, int block) {
    return name + "#" + block;
  }
}
