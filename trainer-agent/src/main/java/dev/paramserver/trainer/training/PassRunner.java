package dev.paramserver.trainer.training;

import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.SetDatasetResponse;
import dev.paramserver.proto.v1.Task;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.trainer.config.TrainerProperties;
import dev.paramserver.trainer.config.TrainingModeSetting;
import dev.paramserver.trainer.master.MasterReports;
import dev.paramserver.trainer.stop.StopSignal;
import java.io.IOException;
import java.util.ArrayList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

/**
 * Runs the job's passes: SetDataset (started while the trainer sets up), then GetTask → train the
 * task → TaskFinished. At the end of each pass one elected trainer evaluates it in the background
 * ({@link PassEvaluations}); when the job is finished the final model is written and the last pass
 * evaluated (each by the trainer elected for it). A stop request finishes the current batch, hands
 * the task (and a prefetched one) back and ends with {@link StoppedException}.
 */
@Component
public class PassRunner {
  private static final Logger log = LoggerFactory.getLogger(PassRunner.class);

  /**
   * How long an asynchronous trainer lets the master hold a WAIT answer (the master caps it at its
   * wait-retry), so that it hears at once when the pass ends.
   */
  static final int WAIT_HOLD_MS = 1000;

  /** Exit code when the master says the job failed. */
  static final int JOB_FAILED = 3;

  private final TrainerProperties props;
  private final MasterReports reports;
  private final Evaluator evaluator;
  private final ModelExporter exporter;
  private final TrainingProgress progress;
  private final StopSignal stop;

  public PassRunner(
      TrainerProperties props,
      MasterReports reports,
      Evaluator evaluator,
      ModelExporter exporter,
      TrainingProgress progress,
      StopSignal stop) {
    this.props = props;
    this.reports = reports;
    this.evaluator = evaluator;
    this.exporter = exporter;
    this.progress = progress;
    this.stop = stop;
  }

  /**
   * Trains until the job ends.
   *
   * @return the exit code: 0 when the job finished, {@value #JOB_FAILED} when it failed
   */
  int run(TrainingContext ctx) throws IOException {
    try (DatasetAnnouncement dataset = announceDataset()) {
      return run(ctx, dataset);
    }
  }

  /**
   * Starts telling the master the job's dataset, on a thread of its own, so that it is done while
   * the trainer sets up ({@link #run(TrainingContext, DatasetAnnouncement)} awaits the answer).
   */
  DatasetAnnouncement announceDataset() {
    return DatasetAnnouncement.start(
        () ->
            reports.setDataset(
                ModelSpecs.absolute(props.data().requireTrainData()),
                TrainingHyperparameters.of(props)));
  }

  /**
   * Trains until the job ends, once the master answered {@code dataset}.
   *
   * @return the exit code: 0 when the job finished, {@value #JOB_FAILED} when it failed
   */
  int run(TrainingContext ctx, DatasetAnnouncement dataset) throws IOException {
    SetDatasetResponse ds = dataset.await();
    log.info(
        "dataset: {} files, {} chunks, {} tasks, {} records, {} passes{}",
        ds.getFiles(),
        ds.getChunks(),
        ds.getTasks(),
        ds.getRecords(),
        ds.getPasses(),
        ds.getAlreadySet() ? " (set before)" : "");
    int pass = 0;
    Parameters idleGrads = Parameters.zerosLike(ctx.model());
    progress.moveTo(TrainerState.TRAINING);
    // a synchronous or bounded-staleness trainer without a task keeps taking part in the steps
    int holdMs = props.communication().mode() == TrainingModeSetting.ASYNC ? WAIT_HOLD_MS : 0;
    try (TaskSource tasks =
            new TaskSource(
                reports,
                stop,
                props.data().prefetch(),
                ctx.storage(),
                holdMs,
                props.communication().tasksPerRequest());
        TaskTrainer trainer = new TaskTrainer(ctx, props, progress, stop);
        PassEvaluations evaluations = new PassEvaluations(evaluator, ctx, stop)) {
      while (true) {
        stop.check("before asking for a task");
        TaskSource.Fetched next = tasks.next(pass);
        GetTaskResponse resp = next.response();
        switch (resp.getOutcome()) {
          case TASK -> train(next, tasks, trainer, pass);
          case WAIT, PASS_NOT_STARTED -> {
            trainer.settle();
            if (!tasks.hasUnreported()) {
              // else ask again at once: the tasks trained since may be what the pass waits for
              idle(ctx, idleGrads, resp.getRetryAfterMs());
            }
          }
          case PASS_FINISHED -> {
            evaluations.passEnded(pass);
            pass = resp.getCurrentPass();
          }
          case JOB_FINISHED -> {
            trainer.settle();
            // the model file is written before this trainer's final report, so whoever waits for
            // the reports finds it
            exporter.exportIfElected(ctx);
            progress.moveTo(TrainerState.EVALUATING);
            evaluations.jobFinished(Math.max(0, resp.getTotalPasses() - 1));
            progress.moveTo(TrainerState.FINISHED);
            log.info("job finished: {} tasks trained by this trainer", progress.tasksDone());
            return 0;
          }
          case JOB_FAILED -> {
            progress.fail(resp.getReason());
            log.error("the job failed: {}", resp.getReason());
            return JOB_FAILED;
          }
          default ->
              throw new IllegalStateException("master answered GetTask with " + resp.getOutcome());
        }
      }
    }
  }

  private void train(TaskSource.Fetched next, TaskSource tasks, TaskTrainer trainer, int pass) {
    Task task = next.task();
    progress.task(task.getId(), task.getPass());
    if (next.readError() != null) {
      log.error("task {} cannot be read: {}", task.getId(), next.readError().getMessage());
      progress.taskFailed();
      reports.failed(task, next.readError().getMessage());
      return;
    }
    tasks.prefetch(pass);
    TaskTrainer.Trained trained;
    try {
      trained =
          trainer.train(
              task, new ArrayList<>(next.examples()), next.response().getLossEveryRecords());
    } catch (StoppedException e) {
      log.info("stopping: handing task {} back to the master", task.getId());
      handBack(task);
      TaskSource.Fetched prefetched = tasks.takePrefetched();
      if (prefetched != null && prefetched.isTask()) {
        handBack(prefetched.task());
      }
      tasks.takeLeased().forEach(this::handBack);
      throw e;
    }
    tasks.finished(task, trained.records(), trained.loss(), trained.applied());
    progress.taskFinished();
  }

  private void handBack(Task task) {
    progress.taskHandedBack();
    if (!reports.handBack(task)) {
      log.warn("task {} was not handed back; the master re-dispatches it later", task.getId());
    }
  }

  private void idle(TrainingContext ctx, Parameters idleGrads, long retryAfterMs) {
    if (props.communication().sync()) {
      // an idle trainer still takes part in each synchronous step, with an empty push
      idleGrads.clear();
      ctx.client().push(idleGrads, ctx.values());
      ctx.client().pull(ctx.values());
      stop.pause(Math.min(50, Math.max(5, retryAfterMs)), "waiting for a task");
    } else if (props.communication().mode() == TrainingModeSetting.BOUNDED_STALENESS) {
      // a trainer without a task keeps pace with empty pushes, or it would hold the others back
      ctx.client().pushNothing(ctx.values());
      stop.pause(Math.min(50, Math.max(5, retryAfterMs)), "waiting for a task");
    } else {
      stop.pause(Math.max(50, retryAfterMs), "waiting for a task");
    }
  }
}
