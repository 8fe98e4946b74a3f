package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import java.nio.FloatBuffer;

/**
 * Copies of one row, with rows of one float (sparse-lr's) moved by one load and store: a bulk copy
 * (the arraycopy stub's call, a buffer's bounds checks) costs more than the float it moves, and the
 * row cache makes several per row and batch.
 */
final class RowCopy {
  private RowCopy() {}

  /** The values of {@code r}'s rows: FLOAT32 bytes read in place (no copy), other types decoded. */
  static FloatBuffer values(SparseRows r) {
    if (r.getDtype() == DataType.FLOAT32) {
      TensorCodec.elementCount(r.getData(), r.getDtype());
      return TensorCodec.floats(r.getData());
    }
    return FloatBuffer.wrap(TensorCodec.decode(r.getData(), r.getDtype()));
  }

  /** {@link System#arraycopy} of {@code w} floats. */
  static void copy(float[] src, int from, float[] dst, int to, int w) {
    if (w == 1) {
      dst[to] = src[from];
    } else {
      System.arraycopy(src, from, dst, to, w);
    }
  }

  /** Row {@code i} of {@code all} (rows of {@code w} floats) into {@code dst}, from index 0. */
  static void read(FloatBuffer all, int i, float[] dst, int w) {
    if (w == 1) {
      dst[0] = all.get(i);
    } else {
      all.get(i * w, dst, 0, w);
    }
  }
}
