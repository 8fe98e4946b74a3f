package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import java.nio.FloatBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sparse rows a trainer keeps between batches (asynchronous mode with pipelining), so that a
 * batch pulls only the rows it lacks. Training thread only.
 *
 * <ul>
 *   <li><b>The batch's view.</b> The model reads small tables holding exactly the rows of the batch
 *       under way (the cached arrays themselves, not copies), filled as the batch is readied: a
 *       lookup there stays in the processor's cache, where one in the whole cache would not.
 *   <li><b>Read-my-writes.</b> Each batch's gradient is applied at once to its rows by the
 *       trainer's own optimizer step ({@link #localStep}), as {@link LocalSteps} does for dense
 *       values; each push's answer carries its rows after the push, and {@link #rebase} replaces
 *       them with the pservers' values plus the local steps taken since the push left.
 *   <li><b>Staleness bound.</b> A row may be used in batch {@code b} only if it was read from its
 *       pserver during batch {@code b - staleness} or later; an older one is pulled again before
 *       use ({@link #wanted}), unless a push carrying it is unanswered (its answer refreshes it).
 *   <li><b>Bounded in bytes.</b> Past {@code maxBytes} the rows least recently used are evicted,
 *       never one that a batch under way or planned uses, nor one an unanswered push carries.
 * </ul>
 */
final class RowCache {
  /** Estimated bytes a cached row costs besides its values: array header, table slots. */
  static final int ROW_OVERHEAD_BYTES = 64;

  /** Which rows unanswered pushes carry (held, or in flight): see {@link GradientSender}. */
  interface Unanswered {
    boolean carries(String table, long id);
  }

  // RowMeta.READ of a row without a value whose pull was started
  private static final int PULLING = Integer.MIN_VALUE + 1;

  private final Map<String, Table> tables = new LinkedHashMap<>();
  private final int staleness;
  private final long maxBytes;
  private final BatchIds batchIds;
  private Unanswered unanswered = (t, id) -> false;
  private int now;
  private long bytes;
  private long evictions;

  /** One cached table: its rows and what is known of them, the batch's view, optimizer state. */
  private static final class Table {
    final String name;
    final int width;
    final RowMeta rows = new RowMeta();
    final Parameters.SparseTable view;
    final ParameterOptimizer optimizer;
    final Parameters.SparseTable[] slots;
    final float[] scratch;
    final int rowBytes;
    long steps;

    Table(String name, int width, ParameterOptimizer optimizer) {
      this.name = name;
      this.width = width;
      this.view = new Parameters.SparseTable(width);
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
    // the batches planned ahead (at most staleness) and the one under way
    this.batchIds = new BatchIds(tables.size(), staleness + 2);
  }

  /** Who knows which rows unanswered pushes carry (the gradient sender). */
  void unanswered(Unanswered u) {
    this.unanswered = u;
  }

  /** Makes the batch's views the sparse tables of {@code values} (what the model reads). */
  void install(Parameters values) {
    for (Table t : tables.values()) {
      values.putSparse(t.name, t.view);
    }
  }

  /** Batch {@code batch} (numbered from 1 by the caller) starts: its view is emptied. */
  void begin(int batch) {
    now = batch;
    for (Table t : tables.values()) {
      t.view.clear();
    }
  }

  /** The batch under way. */
  int now() {
    return now;
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
   * {@code batch - staleness} that no unanswered push carries. For the batch under way ({@code
   * ahead} false) the rows it has go into its view; those pulled go there as they are taken in.
   *
   * @param ahead planning a batch after the one under way: a row without a value whose pull was
   *     started already (for an earlier batch) is not pulled again
   */
  Map<String, long[]> wanted(long[] ids, int batch, boolean ahead) {
    Map<String, long[]> out = new LinkedHashMap<>();
    int oldest = batch - staleness;
    // the batch's distinct ids, found once for every table and every pass over the batch
    BatchIds.Entry e = batchIds.of(ids);
    long[] distinct = e.distinct;
    int ti = 0;
    for (Table t : tables.values()) {
      int[] slots = e.slots[ti];
      long layout = t.rows.layout();
      // slots found when the batch was planned ahead hold while no slot moved since
      boolean known = e.layouts[ti] == layout;
      long[] want = null;
      int n = 0;
      for (int k = 0; k < distinct.length; k++) {
        long id = distinct[k];
        int s = known ? slots[k] : t.rows.add(id);
        slots[k] = s;
        t.rows.set(s, RowMeta.USED, Math.max(batch, t.rows.get(s, RowMeta.USED)));
        float[] row = t.rows.row(s);
        int read = t.rows.get(s, RowMeta.READ);
        boolean pull;
        if (row == null) {
          pull = !(ahead && read == PULLING);
          if (pull) {
            t.rows.set(s, RowMeta.READ, PULLING);
          }
        } else {
          if (!ahead) {
            t.view.put(id, row);
          }
          pull = read < oldest && !unanswered.carries(t.name, id);
        }
        if (pull) {
          if (want == null) {
            want = new long[distinct.length - k];
          }
          want[n++] = id;
        }
      }
      // an add that grew the table moved the slots found before it: found again next time
      e.layouts[ti] = t.rows.layout() == layout ? layout : -1;
      if (n > 0) {
        out.put(t.name, n == want.length ? want : Arrays.copyOf(want, n));
      }
      ti++;
    }
    return out;
  }

  /**
   * Takes pulled rows in, read during batch {@code readAt}, for a pull planned during batch {@code
   * plannedAt}; with {@code view}, puts them into the view of the batch under way. A row that an
   * unanswered push carries, or that an answer refreshed since the pull was planned, keeps its
   * value: the pull may have been read before that push was applied.
   */
  void takePulled(List<SparseRows> pulled, int readAt, int plannedAt, boolean view) {
    for (SparseRows r : pulled) {
      Table t = tables.get(r.getName());
      if (t == null) {
        continue;
      }
      FloatBuffer all = values(r);
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        long id = r.getRowIds(i);
        int s = t.rows.add(id);
        float[] row = t.rows.row(s);
        if (row == null) {
          row = new float[t.width];
          t.rows.setRow(s, row);
          bytes += t.rowBytes;
        } else if (t.rows.get(s, RowMeta.READ) >= plannedAt || unanswered.carries(t.name, id)) {
          if (view) {
            t.view.put(id, row);
          }
          continue;
        }
        all.get(i * t.width, row, 0, t.width);
        t.rows.set(s, RowMeta.READ, readAt);
        if (view) {
          t.view.put(id, row);
        }
      }
    }
  }

  /**
   * Applies one optimizer step of {@code grads}' rows to the rows of the batch under way (the step
   * the pservers apply; for optimizers with state, on a local copy of it fed by this trainer's
   * batches only). {@code grads} is not changed.
   */
  void localStep(Parameters grads) {
    localStep(grads, null, null);
  }

  /**
   * As {@link #localStep(Parameters)}, in one pass over the gradient's rows with one lookup in the
   * view each: first copies each row that {@code before} lacks into it as it was before this step;
   * after the step, copies each row into {@code after} (as {@link #copyRows} does, for a push that
   * leaves at once with this gradient alone).
   *
   * @param before sparse tables of the model's names to copy rows into, or null
   * @param after sparse tables of the model's names, emptied here, or null
   */
  void localStep(Parameters grads, Parameters before, Parameters after) {
    float[][] none = new float[0][];
    for (Table t : tables.values()) {
      t.steps++;
      Parameters.SparseTable to = before == null ? null : before.sparse(t.name);
      Parameters.SparseTable base = after == null ? null : after.sparse(t.name);
      if (base != null) {
        base.clear();
      }
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                float[] w = t.view.rowOrNull(id);
                if (w == null) {
                  if (base != null) {
                    copyCached(t, id, base);
                  }
                  return;
                }
                if (to != null) {
                  to.putCopyIfAbsent(id, w);
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
                if (base != null) {
                  base.put(id, w.clone());
                }
              });
    }
  }

  /** Copies the cached row {@code id} of {@code t}, if it has a value, into {@code into}. */
  private static void copyCached(Table t, long id, Parameters.SparseTable into) {
    int s = t.rows.slot(id);
    float[] w = s < 0 ? null : t.rows.row(s);
    if (w != null) {
      into.put(id, w.clone());
    }
  }

  /**
   * Copies the cached rows of {@code grads}' ids into {@code base}'s sparse tables (emptied first):
   * what {@link #rebase} subtracts.
   */
  void copyRows(Parameters grads, Parameters base) {
    for (Table t : tables.values()) {
      Parameters.SparseTable into = base.sparse(t.name);
      into.clear();
      grads
          .sparse(t.name)
          .forEach(
              (id, g) -> {
                // most pushes carry one batch: its rows are in the view
                float[] w = t.view.rowOrNull(id);
                if (w != null) {
                  into.put(id, w.clone());
                } else {
                  copyCached(t, id, into);
                }
              });
    }
  }

  /**
   * A push was answered with its rows after it was applied ({@code answered}): each cached row
   * becomes the pservers' value plus the local steps taken since the push left ({@code value -
   * base}), read during the batch under way.
   */
  void rebase(List<SparseRows> answered, Parameters base) {
    for (SparseRows r : answered) {
      Table t = tables.get(r.getName());
      if (t == null) {
        continue;
      }
      Parameters.SparseTable b = base.sparse(t.name);
      FloatBuffer all = values(r);
      int w = t.width;
      float[] answer = t.scratch;
      for (int k = 0; k < r.getRowIdsCount(); k++) {
        long id = r.getRowIds(k);
        int s = t.rows.slot(id);
        if (s < 0) {
          continue; // evicted: a later use pulls it
        }
        float[] v = t.rows.row(s);
        if (v == null) {
          v = new float[w];
          all.get(k * w, v, 0, w);
          t.rows.setRow(s, v);
          bytes += t.rowBytes;
        } else {
          all.get(k * w, answer, 0, w);
          float[] from = b.rowOrNull(id);
          for (int i = 0; i < w; i++) {
            v[i] = answer[i] + (from == null ? 0f : v[i] - from[i]);
          }
        }
        t.rows.set(s, RowMeta.READ, now);
      }
    }
  }

  /** The values of {@code r}'s rows: FLOAT32 bytes read in place (no copy), other types decoded. */
  private static FloatBuffer values(SparseRows r) {
    if (r.getDtype() == DataType.FLOAT32) {
      TensorCodec.elementCount(r.getData(), r.getDtype());
      return TensorCodec.floats(r.getData());
    }
    return FloatBuffer.wrap(TensorCodec.decode(r.getData(), r.getDtype()));
  }

  /**
   * Evicts rows last used before batch {@code before}, least recently used first, until the cache
   * holds at most 90 % of its bytes; nothing while it is within its bound. Rows that unanswered
   * pushes carry stay.
   */
  void evictIfFull(int before) {
    if (bytes <= maxBytes) {
      return;
    }
    long target = maxBytes / 10 * 9;
    for (Table t : tables.values()) {
      for (long id : t.rows.evictable(before)) {
        if (bytes <= target) {
          return;
        }
        if (unanswered.carries(t.name, id)) {
          continue;
        }
        int s = t.rows.slot(id);
        if (t.rows.row(s) != null) {
          bytes -= t.rowBytes;
          evictions++;
        }
        t.rows.remove(id);
        for (Parameters.SparseTable slot : t.slots) {
          slot.remove(id);
        }
      }
    }
  }
}
