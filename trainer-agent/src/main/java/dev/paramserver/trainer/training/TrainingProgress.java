package dev.paramserver.trainer.training;

import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * What the trainer is doing, for status, metrics and logs: the session's state (moves checked by
 * {@link TrainerState#canMoveTo}) and the counts. Written by the session's threads.
 */
@Component
public final class TrainingProgress {
  private static final Logger log = LoggerFactory.getLogger(TrainingProgress.class);

  private TrainerState state = TrainerState.STARTING;
  private volatile int pass;
  private volatile long taskId = -1;
  private volatile long tasksDone;
  private volatile long tasksFailed;
  private volatile long tasksHandedBack;
  private volatile long batches;
  private volatile long samples;
  private volatile double lastLoss = Double.NaN;
  private volatile double samplesPerSecond;
  private volatile double evalLoss;
  private volatile double evalAccuracy;
  private volatile String failure;

  public synchronized TrainerState state() {
    return state;
  }

  /**
   * Moves to {@code next} if the current state allows it.
   *
   * @return whether it moved (false, for example, once a stop began)
   */
  public synchronized boolean moveTo(TrainerState next) {
    if (state == next) {
      return true;
    }
    if (!state.canMoveTo(next)) {
      log.debug("trainer stays {} (not moving to {})", state, next);
      return false;
    }
    log.debug("trainer {} -> {}", state, next);
    state = next;
    return true;
  }

  /** Moves to FAILED, keeping the reason for the status. */
  public synchronized void fail(String reason) {
    if (moveTo(TrainerState.FAILED)) {
      failure = reason;
    }
  }

  public int pass() {
    return pass;
  }

  public long tasksDone() {
    return tasksDone;
  }

  public long tasksFailed() {
    return tasksFailed;
  }

  public long tasksHandedBack() {
    return tasksHandedBack;
  }

  public long batches() {
    return batches;
  }

  public long samples() {
    return samples;
  }

  public double lastLoss() {
    return lastLoss;
  }

  public double samplesPerSecond() {
    return samplesPerSecond;
  }

  public double evalLoss() {
    return evalLoss;
  }

  public double evalAccuracy() {
    return evalAccuracy;
  }

  void task(long id, int taskPass) {
    taskId = id;
    pass = taskPass;
  }

  void taskFinished() {
    tasksDone++;
  }

  void taskFailed() {
    tasksFailed++;
  }

  void taskHandedBack() {
    tasksHandedBack++;
  }

  void batch(int size, double loss) {
    batches++;
    samples += size;
    lastLoss = loss;
  }

  void throughput(double perSecond) {
    samplesPerSecond = perSecond;
  }

  void evaluation(double loss, double accuracy) {
    evalLoss = loss;
    evalAccuracy = accuracy;
  }

  /** The details shown by {@code GET /admin/status}. */
  public Map<String, Object> details() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("pass", pass);
    m.put("task", taskId);
    m.put("tasksDone", tasksDone);
    m.put("batches", batches);
    m.put("samples", samples);
    m.put("samplesPerSecond", samplesPerSecond);
    m.put("loss", Double.isNaN(lastLoss) ? null : lastLoss);
    if (failure != null) {
      m.put("failure", failure);
    }
    return m;
  }
}
