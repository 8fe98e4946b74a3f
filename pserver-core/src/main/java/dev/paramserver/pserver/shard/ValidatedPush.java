package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A push whose every gradient was checked (known block, element type, element count, finite values)
 * and decoded to float32, so applying it cannot fail half way.
 */
final class ValidatedPush {
  final List<DenseGradient> dense;
  final List<SparseGradient> sparse;
  // The request it came from (null for a sum of several), logged and recorded as applied.
  final PushGradientsRequest request;

  ValidatedPush(List<DenseGradient> dense, List<SparseGradient> sparse) {
    this(dense, sparse, null);
  }

  private ValidatedPush(
      List<DenseGradient> dense, List<SparseGradient> sparse, PushGradientsRequest request) {
    this.dense = dense;
    this.sparse = sparse;
    this.request = request;
  }

  /** A block's gradient: the first {@code block.values.length} elements of {@code gradient}. */
  record DenseGradient(DenseBlock block, float[] gradient) {}

  /**
   * The gradient of some rows of a table; {@code after}, when not null, receives the rows' values
   * after they were applied (float32 little-endian, in the order of {@code rowIds}): the answer of
   * a push that asks for its rows. With {@code cut} not null (a push with a {@code writer_tag}) the
   * answer is cut to the rows another writer changed last ({@link SparseTable#apply(long[],
   * float[], byte[], int, AnswerCut)}).
   */
  record SparseGradient(
      SparseTable table, long[] rowIds, float[] gradient, byte[] after, AnswerCut cut) {
    SparseGradient(SparseTable table, long[] rowIds, float[] gradient, byte[] after) {
      this(table, rowIds, gradient, after, null);
    }
  }

  /**
   * The rows an answer cut to the rows changed keeps, set once the gradient is applied: the ids of
   * the rows at the front of its {@code after}, in the order of the request; null: every row.
   */
  static final class AnswerCut {
    final int writer;
    long[] ids;

    AnswerCut(int writer) {
      this.writer = writer;
    }
  }

  /**
   * Checks the whole request; throws the first problem found, having changed nothing.
   *
   * @param owned the rows and blocks a trainer may push here ({@link RowOwnership#UNCHECKED} for
   *     records the shard replays: they were checked when first pushed)
   */
  static ValidatedPush of(
      PushGradientsRequest request,
      Map<String, Parameter> parameters,
      Map<String, DenseBlock> blocks,
      Map<String, SparseTable> tables,
      boolean rejectNonFinite,
      RowOwnership owned) {
    return of(request, parameters, blocks, tables, rejectNonFinite, owned, null, null);
  }

  /**
   * {@link #of}; with {@code answerRows} not null each sparse gradient gets a buffer for its rows'
   * values after the push ({@link SparseGradient#after}), filled as it is applied: an array from
   * {@code answerRows} (given at least the bytes asked for), listed by {@link #lentArrays}. With
   * {@code scratch} not null the dense and sparse gradients are decoded into its arrays (longer
   * than needed, reused by the thread's next push): the push must be applied before this thread
   * validates another and not read after.
   */
  static ValidatedPush of(
      PushGradientsRequest request,
      Map<String, Parameter> parameters,
      Map<String, DenseBlock> blocks,
      Map<String, SparseTable> tables,
      boolean rejectNonFinite,
      RowOwnership owned,
      IntFunction<byte[]> answerRows,
      GradientScratch scratch) {
    List<DenseGradient> dense = new ArrayList<>(request.getGradientsCount());
    // the scratch's slots: first the dense blocks', then the sparse gradients'
    int slot = 0;
    for (TensorBlock g : request.getGradientsList()) {
      owned.checkBlock(g.getName(), g.getBlock());
      DenseBlock block = blocks.get(DenseBlock.key(g.getName(), g.getBlock()));
      if (block == null) {
        throw unknownBlock(g.getName(), g.getBlock(), parameters);
      }
      String what = "parameter '" + g.getName() + "' block " + g.getBlock();
      int count = block.values.length;
      float[] values =
          decode(
              what,
              g.getDtype(),
              g.getData(),
              count,
              scratch == null ? null : scratch.floats(slot++, count));
      if (rejectNonFinite) {
        checkFinite("gradient of " + what, values, count);
      }
      dense.add(new DenseGradient(block, values));
    }
    List<SparseGradient> sparse = new ArrayList<>(request.getSparseGradientsCount());
    for (SparseRows rows : request.getSparseGradientsList()) {
      SparseTable table = tables.get(rows.getName());
      if (table == null) {
        throw unknownTable(rows.getName(), parameters);
      }
      long[] ids = checkRowIds(table, rowIds(rows), owned);
      String what =
          "sparse table '"
              + rows.getName()
              + "' ("
              + ids.length
              + " rows of width "
              + table.width()
              + ")";
      int count = ids.length * table.width();
      float[] values =
          decode(
              what,
              rows.getDtype(),
              rows.getData(),
              count,
              scratch == null ? null : scratch.floats(slot++, count));
      if (rejectNonFinite) {
        checkFinite("gradient of " + what, values, count);
      }
      sparse.add(
          new SparseGradient(
              table,
              ids,
              values,
              answerRows == null
                  ? null
                  : answerRows.apply(ids.length * table.width() * Float.BYTES),
              answerRows == null || request.getWriterTag() == 0
                  ? null
                  : new AnswerCut(request.getWriterTag())));
    }
    return new ValidatedPush(dense, sparse, request);
  }

  /**
   * The answer rows of a push validated with {@code answerRows} and applied: per sparse gradient,
   * in the request's order, the table's name, the request's row ids and their values after the
   * push; with a {@code writer_tag}, only the rows its cut keeps (see {@link #changedOnly}).
   */
  List<SparseRows> answeredRows() {
    List<SparseRows> out = new ArrayList<>(sparse.size());
    for (int k = 0; k < sparse.size(); k++) {
      SparseRows g = request.getSparseGradients(k);
      SparseGradient s = sparse.get(k);
      SparseRows.Builder rows = SparseRows.newBuilder().setName(g.getName());
      long[] kept = s.cut() == null ? null : s.cut().ids;
      int count;
      if (kept == null) {
        rows.addAllRowIds(g.getRowIdsList());
        count = s.rowIds().length;
      } else {
        for (long id : kept) {
          rows.addRowIds(id);
        }
        count = kept.length;
      }
      out.add(
          rows.setDtype(DataType.FLOAT32)
              .setData(UnsafeByteOperations.unsafeWrap(s.after(), 0, count * s.table().width() * 4))
              .build());
    }
    return out;
  }

  /**
   * The answer of this push, applied (validated with {@code answerRows}), at update count {@code
   * step}.
   */
  PushOutcome answered(long step) {
    return new PushOutcome(step, false, answeredRows(), lentArrays(), changedOnly());
  }

  /**
   * Whether {@link #answeredRows} may leave rows out: the push carried a {@code writer_tag} (every
   * row it leaves out was updated last by that writer before this push).
   */
  boolean changedOnly() {
    for (SparseGradient g : sparse) {
      if (g.cut() != null) {
        return true;
      }
    }
    return false;
  }

  /** The arrays the sparse gradients' answers are read into (empty when none were asked for). */
  List<byte[]> lentArrays() {
    List<byte[]> out = new ArrayList<>(sparse.size());
    for (SparseGradient g : sparse) {
      if (g.after() != null) {
        out.add(g.after());
      }
    }
    return out;
  }

  static ServiceException unknownBlock(String name, int block, Map<String, Parameter> parameters) {
    Parameter p = parameters.get(name);
    if (p == null) {
      return new ServiceException(
          ErrorReason.UNKNOWN_PARAMETER,
          "parameter '"
              + name
              + "' is not defined on this pserver: define it with InitParameters"
              + " (or check the block placement)");
    }
    return new ServiceException(
        ErrorReason.UNKNOWN_PARAMETER,
        "parameter '"
            + name
            + "' block "
            + block
            + " is not held by this pserver"
            + (p.sparse() ? " ('" + name + "' is a sparse table: use sparse rows)" : "")
            + ": check the block placement");
  }

  static ServiceException unknownTable(String name, Map<String, Parameter> parameters) {
    Parameter p = parameters.get(name);
    String why =
        p == null
            ? " is not defined on this pserver: define it with InitParameters"
            : " is a dense parameter, not a sparse table: push and pull it by block";
    return new ServiceException(ErrorReason.UNKNOWN_PARAMETER, "sparse table '" + name + "'" + why);
  }

  /** The row ids of {@code rows}, read as primitives (not through the boxing list view). */
  static long[] rowIds(SparseRows rows) {
    long[] ids = new long[rows.getRowIdsCount()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = rows.getRowIds(i);
    }
    return ids;
  }

  /** The row ids of {@code ref}, read as primitives. */
  static long[] rowIds(SparseRowsRef ref) {
    long[] ids = new long[ref.getRowIdsCount()];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = ref.getRowIds(i);
    }
    return ids;
  }

  /**
   * Checks that every id is in the table's range and a row this pserver owns ({@code owned});
   * throws for the first one that is not.
   *
   * @return {@code ids}
   */
  static long[] checkRowIds(SparseTable table, long[] ids, RowOwnership owned) {
    long rows = table.parameter.rows;
    for (int i = 0; i < ids.length; i++) {
      long id = ids[i];
      if (id < 0 || (rows > 0 && id >= rows)) {
        throw new ServiceException(
            ErrorReason.BAD_ARGUMENT,
            "sparse table '"
                + table.name()
                + "' row id "
                + id
                + " is out of range [0, "
                + (rows > 0 ? rows : "2^63")
                + ")");
      }
      owned.check(table, id);
    }
    return ids;
  }

  /** {@code data} decoded into {@code into} (at least {@code expected} long), or a new array. */
  private static float[] decode(
      String what, DataType dtype, ByteString data, int expected, float[] into) {
    if (dtype != DataType.FLOAT32 && dtype != DataType.FLOAT16 && dtype != DataType.BFLOAT16) {
      throw new ServiceException(
          ErrorReason.UNSUPPORTED_DTYPE,
          "gradient of "
              + what
              + " has dtype "
              + dtype
              + ": send FLOAT32 (or FLOAT16/BFLOAT16 gradients)");
    }
    int size = TensorCodec.elementSize(dtype);
    int count = data.size() / size;
    if (data.size() % size != 0 || count != expected) {
      String got =
          data.size() % size == 0
              ? String.valueOf(count)
              : data.size() + " bytes, not a whole number of";
      throw new ServiceException(
          ErrorReason.SHAPE_MISMATCH,
          what
              + " expects "
              + expected
              + " "
              + dtype.name().toLowerCase()
              + " values, got "
              + got
              + (data.size() % size == 0 ? "" : " " + dtype.name().toLowerCase() + " values"));
    }
    float[] out = into != null ? into : new float[expected];
    TensorCodec.decode(data, dtype, out, 0);
    return out;
  }

  /** Throws for the first of the first {@code count} values that is not finite. */
  static void checkFinite(String what, float[] values, int count) {
    for (int i = 0; i < count; i++) {
      if (!Float.isFinite(values[i])) {
        throw new ServiceException(
            ErrorReason.NON_FINITE_GRADIENT,
            what
                + " holds "
                + values[i]
                + " at element "
                + i
                + ": fix the trainer's loss (or lower its learning rate)");
      }
    }
  }
}
