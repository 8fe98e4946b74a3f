package dev.paramserver.master.task;

/**
 * The answer to a request for a task of a pass.
 *
 * @param outcome what the trainer gets
 * @param taskId the task handed out (valid for {@link Outcome#TASK})
 * @param epoch the dispatch epoch the trainer reports back with (valid for {@link Outcome#TASK})
 * @param currentPass the pass running now (equals totalPasses once the job finished)
 * @param totalPasses the passes of the job
 * @param reason why the job failed (for {@link Outcome#JOB_FAILED}), else empty
 * @param taskPass the pass the task handed out belongs to (valid for {@link Outcome#TASK}): the
 *     current pass, or the one after it for a task leased ahead
 */
public record Dispatch(
    Outcome outcome,
    int taskId,
    long epoch,
    int currentPass,
    int totalPasses,
    String reason,
    int taskPass) {

  /** What a request for a task leads to. */
  public enum Outcome {
    /** A task was handed out. */
    TASK,
    /** Nothing to hand out now, but tasks of the pass are still pending with other trainers. */
    WAIT,
    /** The requested pass is over. */
    PASS_FINISHED,
    /** The requested pass has not started yet. */
    PASS_NOT_STARTED,
    /** Every pass is done. */
    JOB_FINISHED,
    /** The job failed. */
    JOB_FAILED
  }
}
