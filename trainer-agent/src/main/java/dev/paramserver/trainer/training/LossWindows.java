package dev.paramserver.trainer.training;

import dev.paramserver.proto.v1.LossWindow;
import java.util.ArrayList;
import java.util.List;

/**
 * A task's training loss cut into windows of at least {@code every} records (the last one shorter),
 * for the task's finished report: each window's records, batches and sum of batch loss times batch
 * size. With {@code every} 0 (the master records no loss) nothing is kept. Not thread-safe.
 */
final class LossWindows {
  private final long every;
  private final List<LossWindow> closed = new ArrayList<>();
  private long records;
  private int batches;
  private double lossSum;
  private long lastMs;

  LossWindows(long every) {
    this.every = every;
  }

  /** One batch of {@code size} records with mean loss {@code loss}, trained at {@code nowMs}. */
  void add(int size, double loss, long nowMs) {
    if (every <= 0) {
      return;
    }
    records += size;
    batches++;
    lossSum += loss * size;
    lastMs = nowMs;
    if (records >= every) {
      close();
    }
  }

  /** The windows, the last one closed at the task's end. */
  List<LossWindow> finish() {
    if (records > 0) {
      close();
    }
    return List.copyOf(closed);
  }

  private void close() {
    closed.add(
        LossWindow.newBuilder()
            .setRecords(records)
            .setLossSum(lossSum)
            .setBatches(batches)
            .setEndedMs(lastMs)
            .build());
    records = 0;
    batches = 0;
    lossSum = 0;
  }
}
