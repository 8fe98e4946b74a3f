package dev.paramserver.pserver.shard;

import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.pserver.sparse.TableSettings;
import dev.paramserver.tensor.ShardPlacement;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.function.LongSupplier;

/**
 * A sparse (row) table: rows of {@code width} floats with their optimizer state and update count,
 * in compact primitive storage ({@link SparseRowStore}). A row is created by the first push of its
 * id (once admitted) and may be evicted under a cap; a row that does not exist reads as its initial
 * values, which are a deterministic function of (table, id), so a fresh row, an evicted row and a
 * row not admitted yet all read the same.
 */
final class SparseTable {
  final Parameter parameter;
  final SparseRowStore store;
  // The table's part of the row routing (CRC-32 of its name), computed once for RowOwnership.
  final long routingHash;

  SparseTable(Parameter parameter, SparseSettings settings, LongSupplier clock) {
    this.parameter = parameter;
    this.routingHash = ShardPlacement.tableHash(parameter.name());
    float[][] oneSlot = parameter.optimizer.newSlots(1);
    float[] slotInit = new float[oneSlot.length];
    for (int s = 0; s < oneSlot.length; s++) {
      slotInit[s] = oneSlot[s][0];
    }
    TableSettings table =
        settings.forTable(
            parameter.name(), SparseSettings.rowBytes(parameter.width, slotInit.length));
    this.store = new SparseRowStore(parameter.width, slotInit, this::initRow, table, clock);
  }

  String name() {
    return parameter.name();
  }

  int width() {
    return parameter.width;
  }

  long rowCount() {
    return store.rows();
  }

  /**
   * Copies the values of row {@code id} to {@code out} at {@code offset}; false when the table
   * holds no such row (its initial values were copied).
   */
  boolean read(long id, float[] out, int offset) {
    return store.read(id, out, offset);
  }

  /**
   * {@link #read(long, float[], int)}, leaving out a row whose last update carried the writer tag
   * {@code writer} (not 0).
   *
   * @return false when the row was left out (nothing copied)
   */
  boolean readUnlessWriter(long id, float[] out, int offset, int writer) {
    return store.read(id, out, offset, writer) != SparseRowStore.UNCHANGED;
  }

  /**
   * Applies {@code gradient} (row {@code i} at {@code i * width}) to the rows of {@code ids}; the
   * gradients of rows refused admission are dropped.
   */
  void apply(long[] ids, float[] gradient) {
    apply(ids, gradient, null);
  }

  /**
   * {@link #apply(long[], float[])}, writing into {@code after} (when not null) each row's values
   * right after its update, float32 little-endian in the order of {@code ids}: the rows the push
   * answers with, read in the same probe (see {@link SparseRowStore#update(long[],
   * SparseRowStore.RowUpdate, byte[])}).
   */
  void apply(long[] ids, float[] gradient, byte[] after) {
    store.update(ids, update(gradient), after);
  }

  /**
   * The optimizer's step of row {@code i} of {@code gradient} (row {@code i} at {@code i * width}).
   */
  private SparseRowStore.RowUpdate update(float[] gradient) {
    int width = parameter.width;
    var optimizer = parameter.optimizer;
    return (i, values, slots, updatesBefore) ->
        optimizer.update(values, gradient, i * width, slots, updatesBefore);
  }

  /**
   * {@link #apply(long[], float[], byte[])} by the writer {@code cut.writer} (a push's {@code
   * writer_tag}), its answer cut to the rows whose previous update carried another tag, or none
   * (see {@link SparseRowStore#update(long[], SparseRowStore.RowUpdate, byte[], int, int[])}):
   * their ids go into {@code cut.ids} (left null when the answer keeps every row).
   */
  void apply(long[] ids, float[] gradient, byte[] after, ValidatedPush.AnswerCut cut) {
    int[] kept = KEPT.get();
    if (kept.length < ids.length) {
      kept = new int[ids.length];
      KEPT.set(kept);
    }
    int n = store.update(ids, update(gradient), after, cut.writer, kept);
    if (n >= 0) {
      long[] out = new long[n];
      for (int k = 0; k < n; k++) {
        out[k] = ids[kept[k]];
      }
      cut.ids = out;
    }
  }

  // the positions an answer cut keeps, per applying thread
  private static final ThreadLocal<int[]> KEPT = ThreadLocal.withInitial(() -> new int[0]);

  /**
   * Installs row {@code id} with {@code values} and fresh optimizer state (warm start), bypassing
   * admission; under a cap it evicts as a restored row does.
   */
  void install(long id, float[] values) {
    store.put(
        id, values, parameter.optimizer.newSlots(parameter.width), 0, SparseRowStore.NO_SCORE);
  }

  private void initRow(long id, float[] out, int offset) {
    float stddev = parameter.spec.getInitStddev();
    if (stddev > 0) {
      // Seeded by (table, row) so every pserver and every restart creates the same row.
      SplittableRandom random = new SplittableRandom(seed(parameter.name(), id));
      for (int i = 0; i < parameter.width; i++) {
        out[offset + i] = (float) (random.nextGaussian() * stddev);
      }
    } else {
      Arrays.fill(out, offset, offset + parameter.width, 0f);
    }
  }

  static long seed(String table, long row) {
    long h = 1125899906842597L;
    for (int i = 0; i < table.length(); i++) {
      h = 31 * h + table.charAt(i);
    }
    return h * 0x9E3779B97F4A7C15L + row;
  }
}
