package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Shape;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The start-up of a job on its own ({@code --only startup}): the softmax 1 + 1 job of the training
 * section, launched the same way (etcd, then master, pserver and trainer at once, from their
 * class-data archives), but for one pass and several times in a row, each run's seconds from launch
 * to the first task ({@link FirstTaskWatch}) and its timeline ({@link StartupTimeline}). Reports
 * the same {@code startup_first_task_1x1_s} line as the training section (the median of the runs),
 * in a minute or two instead of the training section's five, to iterate on start-up.
 */
public final class StartupSuite {
  private static final Shape ONE = new Shape(1, 1);

  private final Path runDir;
  private final int runs;
  private final DistributedJob jobs;

  public StartupSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.runs = quick ? 3 : 5;
    this.jobs = new DistributedJob(runDir, jars);
  }

  public void run(Report report) throws Exception {
    Workload w = onePass(Workload.softmax(runDir.resolve("startup").resolve("data"), true));
    List<Outcome> outcomes = new ArrayList<>();
    for (int i = 0; i < runs; i++) {
      Outcome o = jobs.run(w, ONE, i, null);
      outcomes.add(o);
      System.out.printf(
          Locale.ROOT,
          "startup run %d/%d: first task after %.2f s (at most %.3f s late); %s%n",
          i + 1,
          runs,
          o.firstTask(),
          o.firstTaskSlack(),
          o.startup());
    }
    double firstTask = TrainSuite.median(outcomes, Outcome::firstTask);
    report.ratio(
        "startup_first_task_1x1_s",
        firstTask,
        Target.atMost(4),
        "seconds from launching the softmax 1 + 1 job (etcd first) until the master handed out its"
            + " first task, median of "
            + runs
            + " runs of one pass (startup section; polled every "
            + FirstTaskWatch.POLL.toMillis()
            + " ms; slack "
            + Report.fmt(TrainSuite.median(outcomes, Outcome::firstTaskSlack))
            + " s)");
    timelineTable(report, "Start-up", outcomes);
    System.out.printf(Locale.ROOT, "startup: first task after %.2f s (median)%n", firstTask);
  }

  /**
   * A table of the milestones of {@code outcomes}' 1 + 1 jobs, one column per run and their median,
   * in seconds from launch, the first task last.
   */
  static void timelineTable(Report report, String section, List<Outcome> outcomes) {
    List<String> columns = new ArrayList<>(List.of("milestone (s from launch)", "median"));
    for (int i = 0; i < outcomes.size(); i++) {
      columns.add("run " + (i + 1));
    }
    Report.Table t =
        report.table(
            section,
            "Start-up timeline of the softmax 1 + 1 job: seconds from launch (etcd first) to each"
                + " milestone its master, pserver and trainer log",
            columns.toArray(String[]::new));
    Map<String, List<Double>> byMilestone = new LinkedHashMap<>();
    for (StartupTimeline.Milestone m : StartupTimeline.MILESTONES) {
      List<Double> values = new ArrayList<>();
      for (Outcome o : outcomes) {
        values.add(o.startup().getOrDefault(m.name(), Double.NaN));
      }
      byMilestone.put(m.name(), values);
    }
    byMilestone.put("first task handed out", outcomes.stream().map(Outcome::firstTask).toList());
    byMilestone.forEach(
        (name, values) -> {
          List<Object> cells = new ArrayList<>();
          cells.add(name);
          cells.add(Rounds.median(values.stream().mapToDouble(Double::doubleValue).toArray()));
          cells.addAll(values);
          t.row(cells.toArray());
        });
  }

  private static Workload onePass(Workload w) {
    return new Workload(
        w.name(),
        w.title(),
        w.spec(),
        w.batch(),
        w.lr(),
        1,
        w.dir(),
        w.metric(),
        w.chunksPerTask(),
        w.heapMiB());
  }
}
