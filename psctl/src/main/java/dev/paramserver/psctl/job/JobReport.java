package dev.paramserver.psctl.job;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Renders {@code /admin/job} answers as text for {@code psctl status} and {@code psctl watch}. */
final class JobReport {
  private static final DateTimeFormatter CLOCK =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneId.systemDefault());

  private JobReport() {}

  /** The full status: job, passes, pservers, trainers and the last {@code events} events. */
  static String status(JsonNode v, int events) {
    StringBuilder b = new StringBuilder();
    JsonNode j = v.path("job");
    b.append(summary(v)).append('\n');
    if (!j.path("failureReason").asText("").isEmpty()) {
      b.append("failure: ").append(j.path("failureReason").asText()).append('\n');
    }
    b.append("master ")
        .append(j.path("masterId").asText("?"))
        .append(" (http ")
        .append(j.path("adminAddress").asText("?"))
        .append(")\n");
    if (v.path("passes").size() > 0) {
      b.append("\npasses:\n");
      for (JsonNode p : v.path("passes")) {
        b.append(
            String.format(
                Locale.ROOT,
                "  pass %d  records %d  train loss %s  test loss %s  accuracy %s  auc %s%s%n",
                p.path("pass").asInt() + 1,
                p.path("records").asLong(),
                num(p.path("trainLoss"), 4),
                num(p.path("testLoss"), 4),
                num(p.path("accuracy"), 4),
                num(p.path("auc"), 4),
                p.path("endedMs").isNull() ? "  (running)" : ""));
      }
    }
    b.append("\npservers:\n");
    if (v.path("pservers").size() == 0) {
      b.append("  (none registered)\n");
    }
    for (JsonNode p : v.path("pservers")) {
      b.append(
          String.format(
              Locale.ROOT,
              "  %d  %s  %s  step %d  %s  push/s %s  pull/s %s  p99 %s  checkpoint %s%s%n",
              p.path("index").asInt(),
              p.path("address").asText(),
              p.path("state").asText(),
              p.path("step").asLong(),
              bytes(p.path("parameterBytes").asLong()),
              num(p.path("pushesPerSecond"), 1),
              num(p.path("pullsPerSecond"), 1),
              p.path("applyP99Ms").isNumber() ? num(p.path("applyP99Ms"), 2) + " ms" : "-",
              p.path("checkpointAgeSeconds").isNumber()
                  ? duration(p.path("checkpointAgeSeconds").asDouble()) + " ago"
                  : "none",
              flags(p)));
    }
    b.append("\ntrainers:\n");
    if (v.path("trainers").size() == 0) {
      b.append("  (none registered)\n");
    }
    for (JsonNode t : v.path("trainers")) {
      b.append(
          String.format(
              Locale.ROOT,
              "  %s  %s  pass %s  task %s  samples/s %s  loss %s  last report %s%s%n",
              t.path("id").asText(),
              t.path("state").asText(),
              t.path("pass").asInt(-1) < 0 ? "-" : String.valueOf(t.path("pass").asInt() + 1),
              t.path("task").isNumber() ? t.path("task").asText() : "-",
              num(t.path("samplesPerSecond"), 0),
              num(t.path("loss"), 4),
              t.path("lagSeconds").isNumber()
                  ? duration(t.path("lagSeconds").asDouble()) + " ago"
                  : "never",
              flags(t)));
    }
    JsonNode ev = v.path("events");
    if (ev.size() > 0 && events > 0) {
      b.append("\nevents (last ").append(Math.min(events, ev.size())).append("):\n");
      for (int i = Math.max(0, ev.size() - events); i < ev.size(); i++) {
        JsonNode e = ev.get(i);
        b.append("  ")
            .append(CLOCK.format(Instant.ofEpochMilli(e.path("time").asLong())))
            .append("  ")
            .append(e.path("message").asText())
            .append('\n');
      }
    }
    return b.toString();
  }

  /** One line: state, pass, tasks, elapsed, ETA, rates and the flags raised. */
  static String summary(JsonNode v) {
    JsonNode j = v.path("job");
    JsonNode t = j.path("tasks");
    String state = j.path("state").asText("?");
    int total = j.path("totalPasses").asInt();
    int pass = "FINISHED".equals(state) ? total : Math.min(j.path("pass").asInt() + 1, total);
    List<String> alerts = new ArrayList<>();
    for (JsonNode p : v.path("pservers")) {
      if (!flags(p).isEmpty()) {
        alerts.add("pserver " + p.path("index").asInt() + flags(p).toLowerCase(Locale.ROOT));
      }
    }
    for (JsonNode tr : v.path("trainers")) {
      if (!flags(tr).isEmpty()) {
        alerts.add("trainer " + tr.path("id").asText() + flags(tr).toLowerCase(Locale.ROOT));
      }
    }
    return String.format(
        Locale.ROOT,
        "%s  pass %d of %d  tasks %d todo, %d pending, %d done, %d failed  elapsed %s  ETA %s"
            + "  records/s %s%s",
        state,
        pass,
        total,
        t.path("todo").asInt(),
        t.path("pending").asInt(),
        t.path("done").asInt(),
        t.path("failed").asInt(),
        duration(j.path("elapsedSeconds").asDouble()),
        j.path("etaSeconds").isNumber() ? duration(j.path("etaSeconds").asDouble()) : "-",
        num(j.path("recordsPerSecond"), 0),
        alerts.isEmpty() ? "" : "  ! " + String.join(", ", alerts));
  }

  /** A progress bar of the current pass, {@code width} characters inside the brackets. */
  static String passBar(JsonNode v, int width) {
    JsonNode j = v.path("job");
    int tasks = Math.max(1, j.path("datasetTasks").asInt());
    boolean finished = "FINISHED".equals(j.path("state").asText());
    double done = finished ? 1.0 : Math.min(1.0, j.path("tasks").path("done").asDouble() / tasks);
    int filled = (int) Math.round(done * width);
    int total = j.path("totalPasses").asInt();
    int pass = finished ? total : Math.min(j.path("pass").asInt() + 1, total);
    return String.format(
        Locale.ROOT,
        "pass %d/%d [%s%s] %3d%%  ETA %s",
        pass,
        total,
        "#".repeat(filled),
        ".".repeat(width - filled),
        Math.round(done * 100),
        j.path("etaSeconds").isNumber() ? duration(j.path("etaSeconds").asDouble()) : "-");
  }

  static String flags(JsonNode n) {
    StringBuilder b = new StringBuilder();
    if ("LOST".equals(n.path("state").asText())) {
      b.append(" [LOST]");
    } else if (n.path("down").asBoolean() || !n.path("error").asText("").isEmpty()) {
      b.append(" [DOWN]");
    }
    if (n.path("hot").asBoolean()) {
      b.append(" [HOT]");
    }
    if (n.path("straggler").asBoolean()) {
      b.append(" [STRAGGLER]");
    }
    return b.toString();
  }

  static String num(JsonNode n, int digits) {
    return n.isNumber() ? String.format(Locale.ROOT, "%." + digits + "f", n.asDouble()) : "-";
  }

  static String duration(double seconds) {
    long s = Math.round(seconds);
    long h = s / 3600;
    long m = (s % 3600) / 60;
    long sec = s % 60;
    if (h > 0) {
      return h + "h" + m + "m" + sec + "s";
    }
    return m > 0 ? m + "m" + sec + "s" : sec + "s";
  }

  static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = n;
    int i = -1;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return String.format(Locale.ROOT, "%.1f %s", v, units[i]);
  }
}
