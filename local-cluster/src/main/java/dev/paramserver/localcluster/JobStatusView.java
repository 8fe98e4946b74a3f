package dev.paramserver.localcluster;

import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.MissingNode;

/**
 * A typed view of the master's JobStatus as proto3 JSON (the {@code job} field of the leader's
 * {@code /admin/status}). proto3 JSON omits default values, so a missing field reads as 0 or "";
 * int64 fields arrive as strings.
 */
public final class JobStatusView {
  private final JsonNode job;

  public JobStatusView(JsonNode job) {
    this.job = job == null ? MissingNode.getInstance() : job;
  }

  /** WAITING_FOR_DATASET, RUNNING, FINISHED, FAILED (or JOB_STATE_UNSPECIFIED when absent). */
  public String state() {
    return text(job, "state", "JOB_STATE_UNSPECIFIED");
  }

  public boolean isFinished() {
    return "FINISHED".equals(state());
  }

  public boolean isFailed() {
    return "FAILED".equals(state());
  }

  /** The pass running now, 0-based; equals {@link #totalPasses()} when finished. */
  public int pass() {
    return (int) number(job, "pass");
  }

  public int totalPasses() {
    return (int) number(job, "totalPasses");
  }

  public String failureReason() {
    return text(job, "failureReason", "");
  }

  /** Tasks per state in the current pass. */
  public TaskCounts tasks() {
    return TaskCounts.of(job.path("tasks"));
  }

  public List<PassView> passes() {
    List<PassView> list = new ArrayList<>();
    for (JsonNode p : job.path("passes")) {
      list.add(
          new PassView(
              (int) number(p, "pass"),
              TaskCounts.of(p.path("tasks")),
              number(p, "records"),
              decimal(p, "evalLoss"),
              decimal(p, "evalAccuracy"),
              (int) number(p, "evalReports"),
              number(p, "startedMs"),
              number(p, "endedMs")));
    }
    return list;
  }

  /** The JSON this view reads. */
  public JsonNode json() {
    return job;
  }

  @Override
  public String toString() {
    return job.toString();
  }

  /** Task counts of one pass. */
  public record TaskCounts(long todo, long pending, long done, long failed) {
    static TaskCounts of(JsonNode n) {
      return new TaskCounts(
          number(n, "todo"), number(n, "pending"), number(n, "done"), number(n, "failed"));
    }
  }

  /** One pass as reported by the master; eval values are valid when evalReports > 0. */
  public record PassView(
      int pass,
      TaskCounts tasks,
      long records,
      double evalLoss,
      double evalAccuracy,
      int evalReports,
      long startedMs,
      long endedMs) {}

  static long number(JsonNode parent, String field) {
    JsonNode n = parent.path(field);
    if (n.isNumber()) {
      return n.asLong();
    }
    if (n.isString()) {
      try {
        return Long.parseLong(n.asString().trim());
      } catch (NumberFormatException e) {
        return 0;
      }
    }
    return 0;
  }

  static double decimal(JsonNode parent, String field) {
    JsonNode n = parent.path(field);
    if (n.isNumber()) {
      return n.asDouble();
    }
    if (n.isString()) {
      String t = n.asString().trim();
      return switch (t) {
        case "NaN" -> Double.NaN;
        case "Infinity" -> Double.POSITIVE_INFINITY;
        case "-Infinity" -> Double.NEGATIVE_INFINITY;
        default -> {
          try {
            yield Double.parseDouble(t);
          } catch (NumberFormatException e) {
            yield 0;
          }
        }
      };
    }
    return 0;
  }

  private static String text(JsonNode parent, String field, String fallback) {
    JsonNode n = parent.path(field);
    return n.isValueNode() ? n.asString() : fallback;
  }
}
