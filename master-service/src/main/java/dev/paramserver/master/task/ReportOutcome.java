package dev.paramserver.master.task;

/**
 * What became of a TaskFinished or TaskFailed report.
 *
 * @param accepted true if the report changed the task (it matched the pending dispatch)
 * @param duplicate true if the task had already been finished in this pass (counted as a duplicate)
 * @param durationMs how long the task was held, from dispatch to the report, or -1 when unknown
 */
public record ReportOutcome(boolean accepted, boolean duplicate, long durationMs) {
  static final ReportOutcome STALE = new ReportOutcome(false, false, -1);
  static final ReportOutcome DUPLICATE = new ReportOutcome(false, true, -1);
}
