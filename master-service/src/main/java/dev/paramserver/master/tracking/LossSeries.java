package dev.paramserver.master.tracking;

import dev.paramserver.proto.v1.LossWindow;
import java.util.ArrayList;
import java.util.List;

/**
 * The job's training loss as points about every {@code every} records: the loss windows of the
 * accepted task reports are counted, in the order they were accepted, into a running count of the
 * records the job trained (the global step, as {@code samples}), and a point (the mean loss per
 * record since the point before) is made each time that count passes the next multiple of {@code
 * every}. The count only grows: {@link #rebase} lifts it to the job's trained records when this
 * master starts leading (before it takes a report), so points stay monotone across leaders. Fed by
 * the gRPC threads, drained by the console's sampler; thread-safe.
 */
public final class LossSeries {
  /**
   * One point of the training loss.
   *
   * @param samples records the job trained up to this point (the step)
   * @param loss mean training loss per record since the point before
   * @param records records behind this point
   * @param batches mini-batches behind this point
   * @param timeMs when its last window ended (trainer clock, ms since the epoch)
   */
  public record Point(long samples, double loss, long records, long batches, long timeMs) {}

  /** A window larger than this (records, as a signed long) is ignored. */
  static final long MAX_WINDOW_RECORDS = 1L << 40;

  private final long every;
  private final List<Point> ready = new ArrayList<>();
  private long samples;
  private long next;
  private long records;
  private long batches;
  private double lossSum;

  /** Points about every {@code every} records (at least 1). */
  public LossSeries(long every) {
    if (every < 1) {
      throw new IllegalArgumentException("loss points every " + every + " records: must be >= 1");
    }
    this.every = every;
    this.next = every;
  }

  public long every() {
    return every;
  }

  /** Counts the windows of one accepted task report. */
  public synchronized void add(List<LossWindow> windows) {
    for (LossWindow w : windows) {
      if (w.getRecords() <= 0 || w.getRecords() > MAX_WINDOW_RECORDS) {
        continue; // nonsense from a broken or hostile client: it must not bend the step
      }
      if (!Double.isFinite(w.getLossSum())) {
        samples += w.getRecords();
        continue;
      }
      samples += w.getRecords();
      records += w.getRecords();
      batches += w.getBatches();
      lossSum += w.getLossSum();
      if (samples >= next) {
        ready.add(new Point(samples, lossSum / records, records, batches, w.getEndedMs()));
        records = 0;
        batches = 0;
        lossSum = 0;
        next = (samples / every + 1) * every;
      }
    }
  }

  /**
   * Lifts the count to {@code trainedRecords} (the job's, as this master found it when it started
   * leading) if behind; the points and the loss not yet written from before are then dropped, as
   * another leader went on meanwhile.
   */
  public synchronized void rebase(long trainedRecords) {
    if (trainedRecords > samples) {
      samples = trainedRecords;
      next = (samples / every + 1) * every;
      ready.clear();
      records = 0;
      batches = 0;
      lossSum = 0;
    }
  }

  /** The points made since the last call. */
  public synchronized List<Point> drain() {
    List<Point> out = List.copyOf(ready);
    ready.clear();
    return out;
  }
}
