package dev.paramserver.master.task;

/**
 * What became of a TaskFinished or TaskFailed report.
 *
 * @param accepted true if the report changed the task (it matched the pending dispatch)
 * @param duplicate true if the task had already been finished in this pass (counted as a duplicate)
 * @param durationMs how long the task was held, from dispatch to the report, or -1 when unknown
 */
public record Report(boolean accepted, boolean duplicate, long durationMs) {
  static final Report STALE = new Report(false, false, -1);
  static final Report DUPLICATE = new Report(false, true, -1);
}
