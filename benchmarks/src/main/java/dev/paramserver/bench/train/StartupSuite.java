package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.Rounds.Shape;
import java.nio.file.Files;
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

  /**
   * The system property naming a Java 17 binary (scripts/bench.sh sets it from the installed JDKs):
   * when the bench runs on a newer Java, the job is started once more per run with this one, and
   * {@code startup_first_task_1x1_java17_s} reports it.
   */
  public static final String JAVA17_PROPERTY = "bench.java17";

  private final Path runDir;
  private final int runs;
  private final DistributedJob jobs;
  private final DistributedJob java17Jobs;

  public StartupSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.runs = quick ? 3 : 5;
    this.jobs = new DistributedJob(runDir, jars);
    String java17 = System.getProperty(JAVA17_PROPERTY, "");
    this.java17Jobs =
        !java17.isBlank() && Runtime.version().feature() > 17 && Files.isExecutable(Path.of(java17))
            ? new DistributedJob(runDir.resolve("java17"), jars.withJava(java17))
            : null;
  }

  public void run(Report report) throws Exception {
    Workload w = onePass(Workload.softmax(runDir.resolve("startup").resolve("data"), true));
    List<Outcome> outcomes = new ArrayList<>();
    List<Outcome> java17 = new ArrayList<>();
    String newest = "Java " + Runtime.version().feature();
    for (int i = 0; i < runs; i++) {
      outcomes.add(runOnce(jobs, w, i, newest));
      if (java17Jobs != null) {
        // interleaved, so both see the same load
        java17.add(runOnce(java17Jobs, w, i, "Java 17"));
      }
    }
    report(report, outcomes, "startup_first_task_1x1", newest, 6);
    timelineTable(report, "Start-up", outcomes);
    if (!java17.isEmpty()) {
      report(report, java17, "startup_first_task_1x1_java17", "Java 17", 10);
      timelineTable(report, "Start-up on Java 17", java17);
    }
  }

  private Outcome runOnce(DistributedJob jobs, Workload w, int i, String java) throws Exception {
    Outcome o = jobs.run(w, ONE, i, null);
    System.out.printf(
        Locale.ROOT,
        "startup run %d/%d (%s): first task after %.2f s (at most %.3f s late), %.1f CPU-s; %s%n",
        i + 1,
        runs,
        java,
        o.firstTask(),
        o.firstTaskSlack(),
        o.startup().getOrDefault(CPU_TOTAL, Double.NaN),
        o.startup());
    return o;
  }

  private void report(
      Report report, List<Outcome> outcomes, String name, String java, double target) {
    double firstTask = TrainSuite.median(outcomes, Outcome::firstTask);
    report.ratio(
        name + "_s",
        firstTask,
        Target.atMost(target),
        "seconds from launching the softmax 1 + 1 job (etcd first) until the master handed out its"
            + " first task on "
            + java
            + ", median of "
            + runs
            + " runs of one pass (startup section; polled every "
            + FirstTaskWatch.POLL.toMillis()
            + " ms; slack "
            + Report.fmt(TrainSuite.median(outcomes, Outcome::firstTaskSlack))
            + " s)");
    double cpu = TrainSuite.median(outcomes, o -> o.startup().getOrDefault(CPU_TOTAL, Double.NaN));
    report.ratio(
        name + "_cpu_s",
        cpu,
        null,
        "CPU seconds the job's processes (master, pserver, trainer, etcd) used until the first task"
            + " on "
            + java
            + ", median of "
            + runs
            + " runs: less sensitive to a busy machine than the seconds");
    System.out.printf(
        Locale.ROOT,
        "startup (%s): first task after %.2f s, %.1f CPU-s (medians)%n",
        java,
        firstTask,
        cpu);
  }

  static final String CPU_TOTAL = "cpu total";

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
    // CPU seconds up to the first task, per process, their JIT threads and in all
    for (String cpu :
        List.of(
            "cpu master-0", "cpu pserver-0", "cpu trainer-0", "cpu etcd", "cpu jit", CPU_TOTAL)) {
      byMilestone.put(
          cpu + " (CPU-s to first task)",
          outcomes.stream().map(o -> o.startup().getOrDefault(cpu, Double.NaN)).toList());
    }
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
