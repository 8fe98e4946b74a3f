package dev.paramserver.trainer.training;

import dev.paramserver.models.Batch;
import dev.paramserver.models.Parameters;
import dev.paramserver.trainer.pserver.ParameterClient;
import dev.paramserver.trainer.pserver.RowPull;
import dev.paramserver.trainer.pserver.RowWants;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * Readies each batch's sparse rows in the {@link RowCache} and pulls the rows of the batches after
 * it while it computes. Before batch {@code i}: takes in the pulls planned for it, pulls at once
 * what it still lacks (missing, or older than the staleness bound), then plans batches {@code i+1},
 * {@code i+2}, ... (at most {@code staleness} ahead, while the rows they pull fit in the prefetch
 * budget, at least one batch) and starts their pulls, to every pserver at once. With a staleness
 * bound of 2 or more, batches ahead share pulls two by two (one call a pserver for both, each row
 * once): a single batch left to plan waits for the next one, and is then pulled a batch later and
 * so one batch fresher. Training thread only.
 */
final class RowPrefetch {
  /** A pull started ahead: for batch {@code forIndex} of {@code batches}, planned in {@code at}. */
  private record Ahead(RowPull pull, List<Batch> batches, int forIndex, int at) {}

  private final RowCache cache;
  private final ParameterClient client;
  private final int ahead;
  private final long budgetBytes;
  private final long rowBytes;
  private final Deque<Ahead> pending = new ArrayDeque<>();
  private List<Batch> planned;
  private int plannedUpTo = -1;
  private int batch;
  private long rowsAhead;
  private long rowsWaited;

  /**
   * @param staleness the cache's staleness bound (0: nothing is pulled ahead, it would be stale)
   * @param budgetBytes bytes of rows pulled ahead at most (one batch's at least)
   * @param rowBytes the bytes of values of one row of every sparse table together
   */
  RowPrefetch(
      RowCache cache, ParameterClient client, int staleness, long budgetBytes, long rowBytes) {
    this.cache = cache;
    this.client = client;
    this.ahead = staleness;
    this.budgetBytes = budgetBytes;
    this.rowBytes = Math.max(1, rowBytes);
  }

  /**
   * Readies batch {@code i} of {@code batches} (its rows are in the cache and within the staleness
   * bound once this returns) and starts pulling rows of the batches after it.
   *
   * @param latest the values to re-initialise a pserver that lost its state with
   */
  void ready(List<Batch> batches, int i, Parameters latest) {
    batch++;
    cache.begin(batch);
    if (batches != planned) {
      planned = batches;
      plannedUpTo = i - 1;
    }
    // the pulls planned for this batch or before (or for another task's batches)
    while (!pending.isEmpty()
        && (pending.peekFirst().batches() != batches || pending.peekFirst().forIndex() <= i)) {
      Ahead a = pending.pollFirst();
      take(a.pull(), a.at(), latest);
    }
    RowWants now = cache.wanted(batches.get(i).sparseIds(), batch, false, false);
    if (!now.isEmpty()) {
      rowsWaited += now.rows();
      take(client.startRowPull(now), batch, latest);
    }
    plannedUpTo = Math.max(plannedUpTo, i);
    int last = Math.min(batches.size() - 1, i + ahead);
    if (ahead >= 2 && last == i + ahead && plannedUpTo == last - 1) {
      last--; // one batch to plan: it joins the next batch's pull (see the class comment)
    }
    long budget = budgetBytes;
    // a batch waiting for the one after it to share its pull, and its index
    RowWants first = null;
    int firstAt = -1;
    for (int j = plannedUpTo + 1; j <= last; j++) {
      RowWants want =
          cache.wanted(batches.get(j).sparseIds(), batch + (j - i), true, first != null);
      long rows = want.rows();
      if (j > i + 1 && rows * rowBytes > budget) {
        break;
      }
      plannedUpTo = j;
      budget -= rows * rowBytes;
      rowsAhead += rows;
      if (first != null) {
        startAhead(first.plus(want), batches, firstAt);
        first = null;
      } else if (ahead >= 2 && j < last) {
        first = want;
        firstAt = j;
      } else {
        startAhead(want, batches, j);
      }
    }
    if (first != null) {
      startAhead(first, batches, firstAt);
    }
    cache.evictIfFull(batch);
  }

  /** Starts pulling {@code want} (if any) for batch {@code forIndex} of {@code batches}. */
  private void startAhead(RowWants want, List<Batch> batches, int forIndex) {
    if (!want.isEmpty()) {
      pending.addLast(new Ahead(client.startRowPull(want), batches, forIndex, batch));
    }
  }

  /** Takes in the rows of {@code pull}, planned and read during batch {@code at}. */
  private void take(RowPull pull, int at, Parameters latest) {
    cache.takePulled(pull.await(latest), at, at);
    cache.takeLeftOut(pull.wants(), pull.writerTag(), at, at);
  }

  /** Rows pulled ahead of their batch so far. */
  long rowsAhead() {
    return rowsAhead;
  }

  /** Rows a batch had to wait for so far (not pulled ahead, or stale by then). */
  long rowsWaited() {
    return rowsWaited;
  }
}
