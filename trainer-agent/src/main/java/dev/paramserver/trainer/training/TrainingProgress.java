package dev.paramserver.trainer.training;

import java.util.LinkedHashMap;
import java.util.Map;

/** What the trainer is doing, for status and logs. Written by the loop thread only. */
public final class TrainingProgress {
  volatile TrainerState state = TrainerState.STARTING;
  volatile int pass;
  volatile long taskId = -1;
  volatile long tasksDone;
  volatile long batches;
  volatile long samples;
  volatile double lastLoss = Double.NaN;
  volatile double samplesPerSecond;
  volatile String failure;

  public TrainerState state() {
    return state;
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
