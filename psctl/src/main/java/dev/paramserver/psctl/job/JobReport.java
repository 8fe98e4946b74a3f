package dev.paramserver.psctl.job;

import dev.paramserver.adminapi.JobView;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Renders {@code /admin/job} answers (admin-api's {@link JobView}) as text for {@code psctl status}
 * and {@code psctl watch}.
 */
final class JobReport {
  private static final DateTimeFormatter CLOCK =
      DateTimeFormatter.ofPattern("HH:mm:ss").withZone(ZoneId.systemDefault());

  private JobReport() {}

  /**
   * The full status: job, passes, pservers, serving replicas (when any), trainers and the last
   * {@code events} events.
   */
  static String status(JobView v, int events) {
    StringBuilder b = new StringBuilder();
    JobView.Job j = job(v);
    b.append(summary(v)).append('\n');
    if (!text(j.failureReason()).isEmpty()) {
      b.append("failure: ").append(j.failureReason()).append('\n');
    }
    b.append("master ")
        .append(text(j.masterId(), "?"))
        .append(" (http ")
        .append(text(j.adminAddress(), "?"))
        .append(")\n");
    String scaling = scaling(v.scaling());
    if (scaling != null) {
      b.append(scaling).append('\n');
    }
    int omitted = v.passesOmitted() == null ? 0 : v.passesOmitted();
    if (!list(v.passes()).isEmpty() || omitted > 0) {
      b.append("\npasses:\n");
      if (omitted > 0) {
        b.append(
            String.format(Locale.ROOT, "  (%d earlier passes not shown: --passes all)%n", omitted));
      }
      for (JobView.Pass p : list(v.passes())) {
        b.append(
            String.format(
                Locale.ROOT,
                "  pass %d  records %d  train loss %s  test loss %s  accuracy %s  auc %s%s%n",
                p.pass() + 1,
                p.records(),
                num(p.trainLoss(), 4),
                num(p.testLoss(), 4),
                num(p.accuracy(), 4),
                num(p.auc(), 4),
                p.endedMs() == null ? "  (running)" : ""));
      }
    }
    b.append("\npservers:\n");
    if (list(v.pservers()).isEmpty()) {
      b.append("  (none registered)\n");
    }
    for (JobView.Pserver p : list(v.pservers())) {
      b.append(
          String.format(
              Locale.ROOT,
              "  %d  %s  %s  step %d  %s  push/s %s  pull/s %s  p99 %s  checkpoint %s%s%n",
              p.index(),
              p.address(),
              p.state(),
              p.step(),
              bytes(p.parameterBytes()),
              num(p.pushesPerSecond(), 1),
              num(p.pullsPerSecond(), 1),
              p.applyP99Ms() != null ? num(p.applyP99Ms(), 2) + " ms" : "-",
              p.checkpointAgeSeconds() != null
                  ? duration(p.checkpointAgeSeconds()) + " ago"
                  : "none",
              flags(p)));
    }
    if (!list(v.serving()).isEmpty()) {
      b.append("\nserving replicas:\n");
      for (JobView.Serving r : list(v.serving())) {
        b.append(
            String.format(
                Locale.ROOT,
                "  %s  %s  %s  version %s  behind %s  stream lag %d ms  streams open %d%n",
                r.address(),
                r.state(),
                r.source(),
                r.version() > 0 ? String.valueOf(r.version()) : "-",
                r.behind() != null ? r.behind() + " updates" : "-",
                r.lagMs(),
                r.connected()));
      }
    }
    b.append("\ntrainers:\n");
    if (list(v.trainers()).isEmpty()) {
      b.append("  (none registered)\n");
    }
    for (JobView.Trainer t : list(v.trainers())) {
      b.append(
          String.format(
              Locale.ROOT,
              "  %s  %s  pass %s  task %s  tasks done %s  samples/s %s  loss %s  last report %s%s%n",
              t.id(),
              t.state(),
              t.pass() < 0 ? "-" : String.valueOf(t.pass() + 1),
              t.task() != null ? String.valueOf(t.task()) : "-",
              t.tasksDone() != null ? String.valueOf(t.tasksDone()) : "-",
              num(t.samplesPerSecond(), 0),
              num(t.loss(), 4),
              t.lagSeconds() != null ? duration(t.lagSeconds()) + " ago" : "never",
              flags(t)));
    }
    List<JobView.Event> ev = v.events();
    if (!ev.isEmpty() && events > 0) {
      b.append("\nevents (last ").append(Math.min(events, ev.size())).append("):\n");
      for (JobView.Event e : ev.subList(Math.max(0, ev.size() - events), ev.size())) {
        b.append("  ")
            .append(CLOCK.format(Instant.ofEpochMilli(e.time())))
            .append("  ")
            .append(e.message())
            .append('\n');
      }
    }
    return b.toString();
  }

  /**
   * One line about the job's scaling (docs/explanation/elastic.md): the placement epoch, the
   * pservers committed and asked for, the phase, the move under way and the last move; null when
   * there is nothing to say (a master that does not send it, or a job never scaled and idle: epoch
   * 0, no move, and no map yet or one of the count asked for).
   */
  static String scaling(JobView.Scaling s) {
    if (s == null
        || (s.epoch() == 0
            && s.move() == null
            && "idle".equals(text(s.phase(), "idle"))
            && (s.pservers() == null || s.pservers().equals(s.desired())))) {
      return null;
    }
    StringBuilder b = new StringBuilder();
    b.append(
        String.format(
            Locale.ROOT,
            "scaling: placement epoch %d, pservers %s of %s, %s",
            s.epoch(),
            value(s.pservers() != null ? s.pservers() : s.desired(), "?"),
            value(s.desired(), "?"),
            text(s.phase(), "?")));
    if ("failed".equals(s.phase()) && !text(s.lastError()).isEmpty()) {
      b.append(" (").append(s.lastError()).append(')');
    }
    JobView.Move m = s.move();
    if (m != null) {
      b.append(
          String.format(
              Locale.ROOT,
              "; move %s under way: pserver %d -> %d, %d slots, %d blocks",
              m.id(),
              m.from(),
              m.to(),
              m.slots(),
              m.blocks()));
    }
    List<JobView.Move> moves = list(s.moves());
    if (!moves.isEmpty()) {
      JobView.Move last = moves.get(moves.size() - 1);
      b.append("; last move ").append(last.id()).append(' ').append(text(last.result(), "?"));
      if ("committed".equals(last.result())) {
        b.append(
            String.format(
                Locale.ROOT,
                ": pserver %d -> %d, %s, copy %s ms, stall %s ms, %s ms in all",
                last.from(),
                last.to(),
                last.bytes() != null ? bytes(last.bytes()) : "-",
                value(last.copyMs(), "-"),
                value(last.stallMs(), "-"),
                value(last.durationMs(), "-")));
      }
    }
    return b.toString();
  }

  /** One line: state, pass, tasks, elapsed, ETA, rates and the flags raised. */
  static String summary(JobView v) {
    JobView.Job j = job(v);
    JobView.Tasks t = j.tasks() == null ? new JobView.Tasks(0, 0, 0, 0) : j.tasks();
    String state = text(j.state(), "?");
    int total = j.totalPasses();
    int pass = "FINISHED".equals(state) ? total : Math.min(j.pass() + 1, total);
    List<String> alerts = new ArrayList<>();
    for (JobView.Pserver p : list(v.pservers())) {
      if (!flags(p).isEmpty()) {
        alerts.add("pserver " + p.index() + flags(p).toLowerCase(Locale.ROOT));
      }
    }
    for (JobView.Trainer tr : list(v.trainers())) {
      if (!flags(tr).isEmpty()) {
        alerts.add("trainer " + tr.id() + flags(tr).toLowerCase(Locale.ROOT));
      }
    }
    return String.format(
        Locale.ROOT,
        "%s  pass %d of %d  tasks %d todo, %d pending, %d done, %d failed  elapsed %s  ETA %s"
            + "  records/s %s%s",
        state,
        pass,
        total,
        t.todo(),
        t.pending(),
        t.done(),
        t.failed(),
        duration(j.elapsedSeconds()),
        j.etaSeconds() != null ? duration(j.etaSeconds()) : "-",
        num(j.recordsPerSecond(), 0),
        alerts.isEmpty() ? "" : "  ! " + String.join(", ", alerts));
  }

  /** A progress bar of the current pass, {@code width} characters inside the brackets. */
  static String passBar(JobView v, int width) {
    JobView.Job j = job(v);
    int tasks = Math.max(1, j.datasetTasks());
    boolean finished = "FINISHED".equals(j.state());
    double doneTasks = j.tasks() == null ? 0 : j.tasks().done();
    double done = finished ? 1.0 : Math.min(1.0, doneTasks / tasks);
    int filled = (int) Math.round(done * width);
    int total = j.totalPasses();
    int pass = finished ? total : Math.min(j.pass() + 1, total);
    return String.format(
        Locale.ROOT,
        "pass %d/%d [%s%s] %3d%%  ETA %s",
        pass,
        total,
        "#".repeat(filled),
        ".".repeat(width - filled),
        Math.round(done * 100),
        j.etaSeconds() != null ? duration(j.etaSeconds()) : "-");
  }

  /** The last training loss of the curves, or null. */
  static Double lastTrainLoss(JobView v) {
    List<Double> loss = v.series() == null ? List.of() : list(v.series().trainLoss());
    return loss.isEmpty() ? null : loss.get(loss.size() - 1);
  }

  static String flags(JobView.Pserver p) {
    StringBuilder b = new StringBuilder();
    if ("LOST".equals(p.state())) {
      b.append(" [LOST]");
    } else if (p.down() || !text(p.error()).isEmpty()) {
      b.append(" [DOWN]");
    }
    if (p.hot()) {
      b.append(" [HOT]");
    }
    return b.toString();
  }

  static String flags(JobView.Trainer t) {
    StringBuilder b = new StringBuilder();
    if (!text(t.error()).isEmpty()) {
      b.append(" [DOWN]");
    }
    if (t.straggler()) {
      b.append(" [STRAGGLER]");
    }
    return b.toString();
  }

  /** The job of {@code v}; before the master's first sample, one with nothing known yet. */
  private static JobView.Job job(JobView v) {
    return v.job() != null
        ? v.job()
        : new JobView.Job(null, "", null, null, 0, 0, null, 0, 0, null, 0, 0, null, 0, 0);
  }

  private static <T> List<T> list(List<T> l) {
    return l == null ? List.of() : l;
  }

  private static String text(String s) {
    return s == null ? "" : s;
  }

  private static String text(String s, String fallback) {
    return s == null ? fallback : s;
  }

  private static String value(Object o, String fallback) {
    return o == null ? fallback : o.toString();
  }

  static String num(Double n, int digits) {
    return n != null ? String.format(Locale.ROOT, "%." + digits + "f", n) : "-";
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
