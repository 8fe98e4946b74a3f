package dev.paramserver.trainer.training;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToDoubleFunction;

/**
 * The trainer's domain metrics (names as Prometheus shows them): {@code
 * paramserver_trainer_samples_total}, {@code paramserver_trainer_batches_total}, {@code
 * paramserver_trainer_tasks_total{outcome}}, {@code paramserver_trainer_loss}, {@code
 * paramserver_trainer_samples_per_second}, {@code paramserver_trainer_pass}, {@code
 * paramserver_trainer_eval_loss}, {@code paramserver_trainer_eval_accuracy}, {@code
 * paramserver_trainer_bytes_pushed_total}, {@code paramserver_trainer_bytes_pulled_total}, {@code
 * paramserver_trainer_dropped_pushes_total}.
 */
public final class TrainerMetrics {
  private final MeterRegistry registry;
  private final Counter samples;
  private final Counter batches;
  private final Counter tasksFinished;
  private final Counter tasksFailed;
  private final Counter tasksHandedBack;
  private final AtomicLong evalLossMicros = new AtomicLong();
  private final AtomicLong evalAccuracyMicros = new AtomicLong();

  public TrainerMetrics(MeterRegistry registry, TrainingProgress progress) {
    this.registry = registry;
    samples =
        Counter.builder("paramserver.trainer.samples")
            .description("Examples trained on")
            .register(registry);
    batches =
        Counter.builder("paramserver.trainer.batches")
            .description("Mini-batches trained")
            .register(registry);
    tasksFinished = tasks("finished");
    tasksFailed = tasks("failed");
    tasksHandedBack = tasks("handed_back");
    Gauge.builder("paramserver.trainer.loss", progress, p -> nanToZero(p.lastLoss()))
        .description("Training loss of the last mini-batch")
        .register(registry);
    Gauge.builder("paramserver.trainer.samples.per.second", progress, p -> p.samplesPerSecond)
        .description("Training throughput over the last progress window")
        .register(registry);
    Gauge.builder("paramserver.trainer.pass", progress, p -> p.pass)
        .description("The pass being trained")
        .register(registry);
    Gauge.builder("paramserver.trainer.eval.loss", evalLossMicros, v -> v.get() / 1e6)
        .description("Test loss at the end of the last pass")
        .register(registry);
    Gauge.builder("paramserver.trainer.eval.accuracy", evalAccuracyMicros, v -> v.get() / 1e6)
        .description("Test accuracy at the end of the last pass")
        .register(registry);
  }

  private Counter tasks(String outcome) {
    return Counter.builder("paramserver.trainer.tasks")
        .description("Tasks reported to the master, by outcome")
        .tag("outcome", outcome)
        .register(registry);
  }

  private static double nanToZero(double v) {
    return Double.isNaN(v) ? 0 : v;
  }

  /** Registers counters read from an object (bytes pushed and pulled, dropped pushes). */
  public <T> void counter(String name, String description, T obj, ToDoubleFunction<T> f) {
    FunctionCounter.builder(name, obj, f).description(description).register(registry);
  }

  void batch(int size) {
    samples.increment(size);
    batches.increment();
  }

  void taskFinished() {
    tasksFinished.increment();
  }

  void taskFailed(boolean handedBack) {
    (handedBack ? tasksHandedBack : tasksFailed).increment();
  }

  void evaluation(double loss, double accuracy) {
    evalLossMicros.set(Math.round(loss * 1e6));
    evalAccuracyMicros.set(Math.round(accuracy * 1e6));
  }
}
