package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sparse rows a trainer keeps between batches (asynchronous mode with pipelining), so that a
 * batch pulls only the rows it lacks. Its tables are the training thread's sparse tables: the model
 * reads them directly. Training thread only.
 *
 * <ul>
 *   <li><b>Read-my-writes.</b> Each batch's gradient is applied at once to the cached rows by the
 *       trainer's own optimizer step ({@link #localStep}), as {@link LocalSteps} does for dense
 *       values; each push's answer carries its rows after the push, and {@link #rebase} replaces
 *       them with the pservers' values plus the local steps taken since the push left.
 *   <li><b>Staleness bound.</b> A row may be used in batch {@code b} only if it was read from its
 *       pserver during batch {@code b - staleness} or later; an older one is pulled again before
 *       use ({@link #wanted}), unless a push carrying it is unanswered (its answer refreshes it).
 *   <li><b>Bounded in bytes.</b> Past {@code maxBytes} the rows least recently used are evicted,
 *       never one that a batch under way or planned uses, nor one a push in flight carries.
 * </ul>
 */
final class RowCache {
  /** Estimated bytes a cached row costs besides its values: array header, two table slots. */
  static final int ROW_OVERHEAD_BYTES = 64;

  // RowMeta.READ of a row without a value whose pull was started
  private static final int PULLING = Integer.MIN_VALUE + 1;

  private final Map<String, Table> tables = new LinkedHashMap<>();
  private final int staleness;
  private final long maxBytes;
  private int marks;
  private int now;
  private long bytes;
  private long evictions;

  /** One cached table: the rows the model reads, what is known of them, local optimizer state. */
  private static final class Table {
    final String name;
    final int width;
    final Parameters.SparseTable rows;
    final RowMeta meta = new RowMeta();
    final ParameterOptimizer optimizer;
    final Parameters.SparseTable[] slots;
    final float[] scratch;
    final int rowBytes;
    long steps;

    Table(String name, int width, ParameterOptimizer optimizer) {
      this.name = name;
      this.width = width;
      this.rows = new Parameters.SparseTable(width);
      this.optimizer = optimizer;
      this.slots = new Parameters.SparseTable[optimizer.slots()];
      for (int i = 0; i < slots.length; i++) {
        slots[i] = new Parameters.SparseTable(width);
      }
      this.scratch = new float[width];
      this.rowBytes = ROW_OVERHEAD_BYTES + 4 * width * (1 + slots.length);
    }
  }

  /**
   * @param specs the model's parameters: the sparse ones are cached, with their optimizer
   * @param staleness batches a row read from its pserver may be used for (0: read for the batch)
   * @param maxBytes the most bytes of rows kept (estimated: values, local optimizer state and
   *     {@value #ROW_OVERHEAD_BYTES} bytes a row)
   */
  RowCache(List<ParameterSpec> specs, int staleness, long maxBytes) {
    this.staleness = staleness;
    this.maxBytes = maxBytes;
    for (ParameterSpec spec : specs) {
      if (spec.getSparse()) {
        int width = Math.toIntExact(spec.getShape(spec.getShapeCount() - 1));
        tables.put(
            spec.getName(),
            new Table(
                spec.getName(), width, ParameterOptimizer.of(spec.getName(), spec.getOptimizer())));
      }
    }
  }

  /**
   * Batch {@code batch} (numbered from 1 by the caller) starts: local steps and answers count in
   * it.
   */
  void begin(int batch) {
    now = batch;
  }

  /** The batch under way. */
  int now() {
    return now;
  }

  /** Makes the cache's tables the sparse tables of {@code values} (what the model reads). */
  void install(Parameters values) {
    for (Table t : tables.values()) {
      values.putSparse(t.name, t.rows);
    }
  }

  boolean isEmpty() {
    return tables.isEmpty();
  }

  /** Estimated bytes held. */
  long bytes() {
    return bytes;
  }

  /** Rows held, all tables. */
  long rows() {
    long n = 0;
    for (Table t : tables.values()) {
      n += t.rows.size();
    }
    return n;
  }

  long evictions() {
    return evictions;
  }

  /**
   * The rows of {@code ids} that batch {@code batch} needs pulled, by table (distinct ids), and
   * marks every row of {@code ids} used by that batch: those without a row, and those read before
   * {@code batch - staleness} that no unanswered push carries.
   *
   * @param ahead planning a batch after the one under way: a row without a value whose pull was
   *     started already (for an earlier batch) is not pulled again
   */
  Map<String, long[]> wanted(long[] ids, int batch, boolean ahead) {
    Map<String, long[]> out = new LinkedHashMap<>();
    int oldest = batch - staleness;
    int mark = ++marks;
    for (Table t : tables.values()) {
      long[] want = new long[ids.length];
      int n = 0;
      for (long id : ids) {
        int s = t.meta.add(id);
        if (t.meta.get(s, RowMeta.MARK) == mark) {
          continue; // a repeat within the batch, already decided
        }
        t.meta.set(s, RowMeta.MARK, mark);
        t.meta.set(s, RowMeta.USED, Math.max(batch, t.meta.get(s, RowMeta.USED)));
        int read = t.meta.get(s, RowMeta.READ);
        if (t.rows.rowOrNull(id) == null) {
          if (!(ahead && read == PULLING)) {
            t.meta.set(s, RowMeta.READ, PULLING);
            want[n++] = id;
          }
        } else if (read < oldest && t.meta.get(s, RowMeta.PINS) == 0) {
          want[n++] = id;
        }
      }
      if (n > 0) {
        out.put(t.name, Arrays.copyOf(want, n));
      }
    }
    return out;
  }

  /**
   * Takes pulled rows in, read during batch {@code readAt}, for a pull planned during batch {@code
   * plannedAt}. A row a push carried or a local step changed since the pull was planned keeps its
   * value: the pull may have been read before that push was applied, and the push's answer
   * refreshes the row.
   */
  void takePulled(List<SparseRows> pulled, int readAt, int plannedAt) {
    for (SparseRows r : pulled) {
      Table t = tables.get(r.getName());
      if (t == null) {
        continue;
      }
      float[] all = TensorCodec.decode(r.getData(), r.getDtype());
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        long id = r.getRowIds(i);
        int s = t.meta.add(id);
        float[] row = t.rows.rowOrNull(id);
        if (row != null
            && (t.meta.get(s, RowMeta.PINS) > 0 || t.meta.get(s, RowMeta.STEPPED) >= plannedAt)) {
          continue;
        }
        if (row == null) {
          row = new float[t.width];
          t.rows.put(id, row);
          bytes += t.rowBytes;
        }
        System.arraycopy(all, i * t.width, row, 0, t.width);
        t.meta.set(s, RowMeta.READ, readAt);
      }
    }
  }

  /**
   * Applies one optimizer step of {@code grads}' rows to the cached rows (the step the pservers
   * apply; for optimizers with state, on a local copy of it fed by this trainer's batches only), in
   * batch {@code batch}. {@code grads} is not changed.
   */
  void localStep(Parameters grads, int batch) {
    for (Table t : tables.values()) {
      t.steps++;
      float[][] none = new float[0][];
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                float[] w = t.rows.rowOrNull(id);
                if (w == null) {
                  return; // evicted meanwhile: the pservers' answer brings it back
                }
                System.arraycopy(g, 0, t.scratch, 0, t.width);
                float[][] state = none;
                if (t.slots.length > 0) {
                  state = new float[t.slots.length][];
                  for (int k = 0; k < state.length; k++) {
                    state[k] = t.slots[k].rowOrNull(id);
                    if (state[k] == null) {
                      state[k] = t.optimizer.newSlots(t.width)[k];
                      t.slots[k].put(id, state[k]);
                    }
                  }
                }
                t.optimizer.update(w, t.scratch, 0, state, t.steps - 1);
                t.meta.set(t.meta.slot(id), RowMeta.STEPPED, batch);
              });
    }
  }

  /** Counts a push not yet answered for every row of {@code grads} ({@code delta} 1 or -1). */
  void pin(Parameters grads, int delta) {
    for (Table t : tables.values()) {
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                int s = t.meta.add(id);
                t.meta.set(s, RowMeta.PINS, t.meta.get(s, RowMeta.PINS) + delta);
              });
    }
  }

  /** Pins the row {@code id} of {@code table} (a row first carried by the held gradient). */
  void pinRow(String table, long id) {
    Table t = tables.get(table);
    int s = t.meta.add(id);
    t.meta.set(s, RowMeta.PINS, t.meta.get(s, RowMeta.PINS) + 1);
  }

  /** Copies the cached rows of {@code grads}' ids that {@code into} lacks into it. */
  void copyNewRows(Parameters grads, Parameters into) {
    for (Table t : tables.values()) {
      Parameters.SparseTable to = into.sparse(t.name);
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                float[] w = t.rows.rowOrNull(id);
                if (w != null && to.rowOrNull(id) == null) {
                  to.put(id, w.clone());
                }
              });
    }
  }

  /** Copies the cached rows of {@code grads}' ids into {@code base}'s sparse tables (emptied). */
  void copyRows(Parameters grads, Parameters base) {
    for (Table t : tables.values()) {
      Parameters.SparseTable into = base.sparse(t.name);
      into.clear();
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                float[] w = t.rows.rowOrNull(id);
                if (w != null) {
                  into.put(id, w.clone());
                }
              });
    }
  }

  /**
   * A push was answered with its rows after it was applied ({@code pulled}'s sparse tables): each
   * cached row becomes the pservers' value plus the local steps taken since the push left ({@code
   * value - base}), read during batch {@code readAt}. Then releases the push's pins on the rows of
   * its gradient {@code sent}.
   */
  void rebase(Parameters pulled, Parameters base, Parameters sent, int readAt) {
    for (Table t : tables.values()) {
      Parameters.SparseTable b = base.sparse(t.name);
      pulled
          .sparse(t.name)
          .forEach(
              (id, p) -> {
                float[] v = t.rows.rowOrNull(id);
                if (v == null) {
                  if (t.meta.slot(id) < 0) {
                    return; // evicted: a later use pulls it
                  }
                  v = new float[t.width];
                  t.rows.put(id, v);
                  bytes += t.rowBytes;
                  System.arraycopy(p, 0, v, 0, t.width);
                } else {
                  float[] from = b.rowOrNull(id);
                  for (int i = 0; i < t.width; i++) {
                    v[i] = p[i] + (from == null ? 0f : v[i] - from[i]);
                  }
                }
                t.meta.set(t.meta.slot(id), RowMeta.READ, readAt);
              });
    }
    pin(sent, -1);
  }

  /**
   * Evicts rows last used before batch {@code before}, least recently used first, until the cache
   * holds at most 90 % of its bytes; nothing while it is within its bound.
   */
  void evictIfFull(int before) {
    if (bytes <= maxBytes) {
      return;
    }
    long target = maxBytes / 10 * 9;
    List<Table> order = new ArrayList<>(tables.values());
    for (Table t : order) {
      if (bytes <= target) {
        return;
      }
      long[] keyed = t.meta.evictable(before);
      for (long id : keyed) {
        if (bytes <= target) {
          break;
        }
        t.meta.remove(id);
        if (t.rows.remove(id) != null) {
          bytes -= t.rowBytes;
          evictions++;
        }
        for (Parameters.SparseTable slot : t.slots) {
          slot.remove(id);
        }
      }
    }
  }
}
