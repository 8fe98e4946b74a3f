package dev.paramserver.trainer.training;

import dev.paramserver.trainer.pserver.PserverTraffic;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import org.springframework.stereotype.Component;

/**
 * The trainer's domain metrics, read from {@link TrainingProgress} and {@link PserverTraffic}
 * (names as Prometheus shows them): {@code paramserver_trainer_samples_total}, {@code
 * paramserver_trainer_batches_total}, {@code paramserver_trainer_tasks_total{outcome}}, {@code
 * paramserver_trainer_loss}, {@code paramserver_trainer_samples_per_second}, {@code
 * paramserver_trainer_pass}, {@code paramserver_trainer_eval_loss}, {@code
 * paramserver_trainer_eval_accuracy}, {@code paramserver_trainer_bytes_pushed_total}, {@code
 * paramserver_trainer_bytes_pulled_total}, {@code paramserver_trainer_dropped_pushes_total}, {@code
 * paramserver_trainer_duplicate_pushes_total}, {@code paramserver_trainer_moved_requests_total},
 * {@code paramserver_trainer_pushes_acknowledged_total{pserver}}, {@code
 * paramserver_trainer_push_round_trip_seconds} and {@code paramserver_trainer_moved_wait_seconds}
 * (timers).
 */
@Component
public final class TrainerMetrics {
  private final MeterRegistry registry;

  public TrainerMetrics(MeterRegistry registry, TrainingProgress progress, PserverTraffic traffic) {
    this.registry = registry;
    counter("paramserver.trainer.samples", "Examples trained on", progress, p -> p.samples());
    counter("paramserver.trainer.batches", "Mini-batches trained", progress, p -> p.batches());
    tasks(progress, "finished", TrainingProgress::tasksDone);
    tasks(progress, "failed", TrainingProgress::tasksFailed);
    tasks(progress, "handed_back", TrainingProgress::tasksHandedBack);
    gauge(
        "paramserver.trainer.loss",
        "Training loss of the last mini-batch",
        progress,
        p -> nanToZero(p.lastLoss()));
    gauge(
        "paramserver.trainer.samples.per.second",
        "Training throughput over the last progress window",
        progress,
        TrainingProgress::samplesPerSecond);
    gauge("paramserver.trainer.pass", "The pass being trained", progress, p -> p.pass());
    gauge(
        "paramserver.trainer.eval.loss",
        "Test loss at the end of the last pass",
        progress,
        TrainingProgress::evalLoss);
    gauge(
        "paramserver.trainer.eval.accuracy",
        "Test accuracy at the end of the last pass",
        progress,
        TrainingProgress::evalAccuracy);
    counter(
        "paramserver.trainer.bytes.pushed",
        "Gradient bytes sent to pservers",
        traffic,
        t -> t.bytesPushed());
    counter(
        "paramserver.trainer.bytes.pulled",
        "Parameter bytes received from pservers",
        traffic,
        t -> t.bytesPulled());
    counter(
        "paramserver.trainer.dropped.pushes",
        "Gradient pushes never acknowledged (the trainer stopped while retrying them)",
        traffic,
        t -> t.droppedPushes());
    counter(
        "paramserver.trainer.duplicate.pushes",
        "Retried pushes a pserver had applied already and acknowledged without applying again",
        traffic,
        t -> t.duplicatePushes());
    counter(
        "paramserver.trainer.moved.requests",
        "Pushes and pulls a pserver refused with MOVED, resent by the new placement in pieces",
        traffic,
        t -> t.movedRequests());
    // built once: recorded for every streamed push request
    Timer roundTrip =
        Timer.builder("paramserver.trainer.push.round.trip")
            .description(
                "Time from writing a push request onto a pserver's push stream to the training"
                    + " thread taking its answer in")
            .register(registry);
    traffic.onPushRoundTrip(nanos -> roundTrip.record(nanos, TimeUnit.NANOSECONDS));
    Timer movedWait =
        Timer.builder("paramserver.trainer.moved.wait")
            .description(
                "Time a push or pull refused with MOVED waited for the placement epoch it named"
                    + " (a slot move's stall, its commit and the trainer seeing it)")
            .publishPercentiles(0.5, 0.99)
            .register(registry);
    traffic.onMovedWait(nanos -> movedWait.record(nanos, TimeUnit.NANOSECONDS));
    traffic.onNewPserver(
        ps ->
            FunctionCounter.builder(
                    "paramserver.trainer.pushes.acknowledged",
                    traffic,
                    t -> t.acknowledgedPushes(ps))
                .description(
                    "Push requests a pserver acknowledged, each once however often it was sent")
                .tag("pserver", Integer.toString(ps))
                .register(registry));
  }

  private void tasks(
      TrainingProgress progress, String outcome, ToDoubleFunction<TrainingProgress> f) {
    FunctionCounter.builder("paramserver.trainer.tasks", progress, f)
        .description("Tasks reported to the master, by outcome")
        .tag("outcome", outcome)
        .register(registry);
  }

  private <T> void counter(String name, String description, T obj, ToDoubleFunction<T> f) {
    FunctionCounter.builder(name, obj, f).description(description).register(registry);
  }

  private <T> void gauge(String name, String description, T obj, ToDoubleFunction<T> f) {
    Gauge.builder(name, obj, f).description(description).register(registry);
  }

  private static double nanToZero(double v) {
    return Double.isNaN(v) ? 0 : v;
  }
}
