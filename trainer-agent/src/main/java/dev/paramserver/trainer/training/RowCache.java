package dev.paramserver.trainer.training;

import dev.paramserver.models.BatchRows;
import dev.paramserver.models.Parameters;
import dev.paramserver.optimizers.ParameterOptimizer;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.trainer.pserver.RowWants;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sparse rows a trainer keeps between batches (asynchronous mode with pipelining), so that a
 * batch pulls only the rows it lacks. Training thread only.
 *
 * <ul>
 *   <li><b>One lookup per row and batch.</b> Once a batch is readied, {@link #resolve} gives each
 *       of its distinct ids a batch-local index (the slots found when it was planned: no second
 *       probe) and fills a {@link BatchRows} with the cached arrays themselves by that index; the
 *       model reads them and sums their gradients there, the local step, the push ({@link
 *       PushRows}) and its answer go through the same flat arrays.
 *   <li><b>Read-my-writes.</b> Each batch's gradient is applied at once to its rows by the
 *       trainer's own optimizer step ({@link #localStep}), as {@link LocalSteps} does for dense
 *       values; each push's answer carries its rows after the push, and {@link #rebase} replaces
 *       them with the pservers' values plus the local steps taken since the push left.
 *   <li><b>Staleness bound.</b> A row may be used in batch {@code b} only if it was read from its
 *       pserver during batch {@code b - staleness} or later; an older one is pulled again before
 *       use ({@link #wanted}), unless a push carrying it is unanswered (its answer refreshes it;
 *       each row counts the unanswered pushes carrying it, {@link RowMeta#carried}).
 *   <li><b>Bounded in bytes.</b> Past {@code maxBytes} the rows least recently used are evicted,
 *       never one that a batch under way or planned uses, nor one an unanswered push carries.
 * </ul>
 */
final class RowCache {
  /** Estimated bytes a cached row costs besides its values: array header, table slots. */
  static final int ROW_OVERHEAD_BYTES = 64;

  // RowMeta.READ of a row without a value whose pull was started
  private static final int PULLING = Integer.MIN_VALUE + 1;

  private final Map<String, CachedTable> tables = new LinkedHashMap<>();
  private final int staleness;
  private final long maxBytes;
  private final BatchIds batchIds;
  private final List<String> names = new ArrayList<>();
  private final int[] widths;
  private final RowMeta[] metas;
  // the batch resolved last, and the gradients of the batches since the last local step
  private BatchIds.Entry current;
  private PushRows accumulated;
  private int now;
  private long bytes;
  private long evictions;
  // the writer tag pushes and pulls are sent with (0: none)
  private int writerTag;

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
            new CachedTable(
                spec.getName(),
                tables.size(),
                width,
                ParameterOptimizer.of(spec.getName(), spec.getOptimizer())));
        names.add(spec.getName());
      }
    }
    this.widths = new int[tables.size()];
    this.metas = new RowMeta[tables.size()];
    for (CachedTable t : tables.values()) {
      widths[t.index] = t.width;
      metas[t.index] = t.rows;
    }
    this.accumulated = newPushRows();
    // the batches planned ahead (at most staleness) and the one under way
    this.batchIds = new BatchIds(tables.size(), staleness + 2);
  }

  /**
   * Empties the sparse tables of {@code values}: the model reads each batch's rows from {@link
   * #resolve}'s {@link BatchRows}, not from them.
   */
  void install(Parameters values) {
    for (CachedTable t : tables.values()) {
      values.putSparse(t.name, new Parameters.SparseTable(t.width));
    }
  }

  /** Batch {@code batch} (numbered from 1 by the caller) starts. */
  void begin(int batch) {
    now = batch;
  }

  /** An empty {@link PushRows} of the cached tables. */
  PushRows newPushRows() {
    return new PushRows(names, widths, metas);
  }

  /** A {@link BatchRows} of the cached tables. */
  BatchRows newBatchRows() {
    return new BatchRows(names, widths);
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
    for (CachedTable t : tables.values()) {
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
   * {@code batch - staleness} that no unanswered push carries. With a writer tag ({@link
   * #writerTag}), the rows that have a value come first, counted as held.
   *
   * @param ahead planning a batch after the one under way: a row without a value whose pull was
   *     started already (for an earlier batch) is not pulled again
   * @param paired batch {@code batch - 1} was planned just before, into the same pull: a row it
   *     wanted is not wanted twice
   */
  RowWants wanted(long[] ids, int batch, boolean ahead, boolean paired) {
    RowWants out = new RowWants(writerTag);
    int oldest = batch - staleness;
    // the batch's distinct ids, found once for every table and every pass over the batch
    BatchIds.Entry e = batchIds.of(ids);
    long[] distinct = e.distinct;
    int ti = 0;
    for (CachedTable t : tables.values()) {
      int[] slots = e.slots[ti];
      long layout = t.rows.layout();
      // slots found when the batch was planned ahead hold while no slot moved since
      boolean known = e.layouts[ti] == layout;
      long[] want = null; // held rows from the front, with a writer tag the others from the back
      int[] heldAt = null; // the slots of the held rows
      int n = 0;
      int back = 0;
      for (int k = 0; k < distinct.length; k++) {
        long id = distinct[k];
        int s = known ? slots[k] : t.rows.add(id);
        slots[k] = s;
        int used = t.rows.get(s, RowMeta.USED);
        t.rows.set(s, RowMeta.USED, Math.max(batch, used));
        float[] row = t.rows.row(s);
        int read = t.rows.get(s, RowMeta.READ);
        boolean pull;
        if (row == null) {
          pull = !(ahead && read == PULLING);
          if (pull) {
            t.rows.set(s, RowMeta.READ, PULLING);
          }
        } else {
          // batch - 1 (used it, planned just before) pulled it if it was stale for that batch
          pull =
              read < oldest
                  && t.rows.carried(s) == 0
                  && !(paired && used == batch - 1 && read < oldest - 1);
        }
        if (pull) {
          if (want == null) {
            want = new long[distinct.length - k];
            heldAt = new int[want.length];
          }
          if (row == null && writerTag != 0) {
            want[want.length - ++back] = id;
          } else {
            heldAt[n] = s;
            want[n++] = id;
          }
        }
      }
      // an add that grew the table moved the slots found before it: found again next time
      e.layouts[ti] = t.rows.layout() == layout ? layout : -1;
      if (n + back > 0) {
        if (n + back < want.length) {
          System.arraycopy(want, want.length - back, want, n, back);
          want = Arrays.copyOf(want, n + back);
        }
        out.put(t.name, want, writerTag == 0 ? 0 : n);
        out.heldSlots(t.name, heldAt, e.layouts[ti]);
      }
      ti++;
    }
    return out;
  }

  /** The writer tag pushes and pulls are sent with from now on (0: none). */
  void writerTag(int tag) {
    writerTag = tag;
  }

  int writerTag() {
    return writerTag;
  }

  /**
   * After {@link #takePulled} took every answer of a pull of {@code wants} under tag {@code tag}:
   * each held row (the first {@code held} ids of a table) the answers left out was last changed by
   * this writer, so counts as read during {@code readAt} if the tag is still in use (no answer lost
   * since), no unanswered push carries it and nothing refreshed it since the pull was planned
   * ({@code plannedAt}; {@code takePulled} marked the rows answered). Found at the slots {@link
   * #wanted} recorded, again only if a slot moved since.
   */
  void takeLeftOut(RowWants wants, int tag, int readAt, int plannedAt) {
    if (tag == 0 || tag != writerTag) {
      return;
    }
    for (Map.Entry<String, long[]> w : wants.ids().entrySet()) {
      CachedTable t = tables.get(w.getKey());
      RowWants.HeldSlots found = wants.heldSlots(w.getKey());
      boolean known = found != null && t != null && found.layout() == t.rows.layout();
      int held = t == null ? 0 : wants.held(w.getKey());
      for (int i = 0; i < held; i++) {
        int s = known ? found.slots()[i] : t.rows.slot(w.getValue()[i]);
        if (s >= 0
            && t.rows.get(s, RowMeta.READ) < plannedAt
            && t.rows.carried(s) == 0
            && t.rows.row(s) != null) {
          t.rows.set(s, RowMeta.READ, readAt);
        }
      }
    }
  }

  /**
   * Takes pulled rows in, read during batch {@code readAt}, for a pull planned during batch {@code
   * plannedAt}. A row that an unanswered push carries, or that an answer refreshed since the pull
   * was planned, keeps its value: the pull may have been read before that push was applied.
   */
  void takePulled(List<SparseRows> pulled, int readAt, int plannedAt) {
    for (SparseRows r : pulled) {
      CachedTable t = tables.get(r.getName());
      if (t == null) {
        continue;
      }
      FloatBuffer all = RowCopy.values(r);
      for (int i = 0; i < r.getRowIdsCount(); i++) {
        long id = r.getRowIds(i);
        int s = t.rows.add(id);
        float[] row = t.rows.row(s);
        if (row == null) {
          row = new float[t.width];
          t.rows.setRow(s, row);
          bytes += t.rowBytes;
        } else if (t.rows.get(s, RowMeta.READ) >= plannedAt || t.rows.carried(s) > 0) {
          continue;
        }
        RowCopy.read(all, i, row, t.width);
        t.rows.set(s, RowMeta.READ, readAt);
      }
    }
  }

  /**
   * The batch whose ids are {@code ids} (readied: {@link #wanted} saw it for the batch under way)
   * into {@code rows}: its distinct ids by batch-local index, and per table the cached rows by that
   * index (null: no value), with the slots {@link #wanted} found (found again only if a slot moved
   * since). Gradients zeroed.
   */
  void resolve(long[] ids, BatchRows rows) {
    BatchIds.Entry e = batchIds.of(ids);
    long[] distinct = e.distinct;
    rows.reset(distinct, distinct.length, e.local);
    for (CachedTable t : tables.values()) {
      int[] slots = e.slots[t.index];
      long layout = t.rows.layout();
      if (e.layouts[t.index] != layout) {
        for (int k = 0; k < distinct.length; k++) {
          slots[k] = t.rows.add(distinct[k]);
        }
        layout = t.rows.layout();
        e.layouts[t.index] = layout;
      }
      float[][] values = rows.table(t.index).values();
      for (int k = 0; k < distinct.length; k++) {
        values[k] = t.rows.row(slots[k]);
      }
    }
    current = e;
  }

  /**
   * Adds the gradients the model summed in {@code rows} (the batch {@link #resolve} gave last) to
   * those of the batches since the last {@link #localStep}; from here until their push is answered,
   * unanswered pushes count as carrying their rows.
   */
  void accumulate(BatchRows rows) {
    BatchIds.Entry e = current;
    if (e == null || e.distinct != rows.ids()) {
      throw new IllegalStateException("the batch's rows were not resolved last");
    }
    accumulated.add(rows, e.slots);
  }

  /** Multiplies the gradients accumulated by {@code f} (the mean of several batches). */
  void scaleAccumulated(float f) {
    accumulated.scale(f);
  }

  /**
   * Applies one optimizer step of the gradients accumulated to their cached rows (the step the
   * pservers apply; for optimizers with state, on a local copy of it fed by this trainer's batches
   * only). First copies each row as it was before this step into the rows' {@link PushRows#before};
   * with {@code copyBase}, copies each row after the step into the rows' base (what {@link
   * PushRows#copyBase} does, for a push that leaves at once with this gradient alone).
   */
  void localStep(boolean copyBase) {
    PushRows acc = accumulated;
    float[][] none = new float[0][];
    for (CachedTable t : tables.values()) {
      t.steps++;
      float[] g = acc.grads(t.index);
      float[] before = acc.before(t.index);
      float[] base = acc.base(t.index);
      int w = t.width;
      for (int k = 0; k < acc.count(); k++) {
        float[] row = acc.row(t.index, k);
        if (row == null) {
          continue; // no value: the push's answer gives it one
        }
        RowCopy.copy(row, 0, before, k * w, w);
        RowCopy.copy(g, k * w, t.scratch, 0, w);
        float[][] state = none;
        if (t.slots.length > 0) {
          state = new float[t.slots.length][];
          for (int j = 0; j < state.length; j++) {
            state[j] = t.slots[j].rowOrNull(acc.id(k));
            if (state[j] == null) {
              state[j] = t.optimizer.newSlots(w)[j];
              t.slots[j].put(acc.id(k), state[j]);
            }
          }
        }
        t.optimizer.update(row, t.scratch, 0, state, t.steps - 1);
        if (copyBase) {
          RowCopy.copy(row, 0, base, k * w, w);
        }
      }
    }
  }

  /**
   * The gradients accumulated, stepped locally, for a push ({@link PushRows#merge} them into one
   * held); {@code empty} takes their place.
   */
  PushRows takeAccumulated(PushRows empty) {
    PushRows out = accumulated;
    accumulated = empty;
    return out;
  }

  /**
   * Whether every cached table's optimizer is {@link ParameterOptimizer#additive}: the local steps
   * then leave a row as the pservers' steps of the same gradients do (up to float rounding where
   * batches were summed into one push), so a push may ask for only the rows another writer changed
   * ({@code writer_tag}) and the rest are confirmed ({@link #confirm}).
   */
  boolean additive() {
    for (CachedTable t : tables.values()) {
      if (!t.optimizer.additive()) {
        return false;
      }
    }
    return !tables.isEmpty();
  }

  /**
   * A push sent with a {@code writer_tag} was answered with only the rows another writer changed
   * ({@code rows_changed_only}, every answer taken, none lost: see {@code
   * StreamedPush#changedOnly}), and its writer's earlier pushes' answers were all taken: every row
   * it carried is as fresh as an answered one, read during the batch under way. Releases the push
   * (as {@link PushRows#release}); {@link #rebase} its answered rows first.
   */
  void confirm(PushRows push) {
    push.release(now);
  }

  /**
   * A push was answered with its rows after it was applied ({@code answered}): each cached row
   * becomes the pservers' value plus the local steps taken since the push left ({@code value -
   * base}), read during the batch under way. Found through the push's own arrays.
   */
  void rebase(List<SparseRows> answered, PushRows push) {
    for (SparseRows r : answered) {
      CachedTable t = tables.get(r.getName());
      if (t == null) {
        continue;
      }
      FloatBuffer all = RowCopy.values(r);
      int w = t.width;
      float[] base = push.base(t.index);
      float[] answer = t.scratch;
      int hint = 0;
      for (int j = 0; j < r.getRowIdsCount(); j++) {
        int k = push.find(r.getRowIds(j), hint);
        int s = k < 0 ? -1 : push.slot(t.index, k);
        if (s < 0) {
          continue; // not this push's, or evicted: a later use pulls it
        }
        hint = k + 1;
        float[] pushed = push.row(t.index, k);
        float[] v = t.rows.row(s);
        if (v == null) {
          v = new float[w];
          RowCopy.read(all, j, v, w);
          t.rows.setRow(s, v);
          bytes += t.rowBytes;
        } else if (pushed == null) {
          RowCopy.read(all, j, v, w); // it had no value when the push left
        } else {
          RowCopy.read(all, j, answer, w);
          for (int i = 0; i < w; i++) {
            v[i] = answer[i] + (v[i] - base[k * w + i]);
          }
        }
        t.rows.set(s, RowMeta.READ, now);
      }
    }
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
    for (CachedTable t : tables.values()) {
      for (long id : t.rows.evictable(before)) {
        if (bytes <= target) {
          return;
        }
        int s = t.rows.slot(id);
        if (t.rows.carried(s) > 0) {
          continue;
        }
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
