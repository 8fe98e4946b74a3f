package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.JfrSummary;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.wire.WireSuite;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Training throughput of three workloads ({@link Workload}: the demo softmax, a dense MLP of 5M
 * parameters, a click-through model over 10M sparse ids), each trained by one JVM with no RPC and
 * by 1 + 1, 2 + 2 and 4 + 4 processes (pservers + trainers) on the same data for the same passes,
 * with the same batch size and plain SGD. Two rates each, against the single JVM measured the same
 * way:
 *
 * <ul>
 *   <li><b>steady state</b>: records / seconds of the second half of the passes, as the master
 *       reports them (the single JVM times its passes the same way); the first half is the warm-up
 *       (class loading, the JIT compiling the RPC and training paths of every process), so that the
 *       figure is the rate a long job trains at;
 *   <li><b>whole job</b>: all records of all passes / seconds from launching the processes (the
 *       single JVM's too: it runs in a JVM of its own) to the end of the last pass: what a user
 *       waits for.
 * </ul>
 *
 * <p>{@code --quick} runs the softmax only, on 1 + 1 and 2 + 2. With {@code --profile}, the softmax
 * 1 + 1 job's pserver and trainer record JFR over the measured passes (which slows them: the
 * figures of that run are then not comparable).
 */
public final class TrainSuite {
  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;
  private final boolean profile;
  private final List<Path> profiles = new ArrayList<>();
  private final Map<String, Map<String, ServerRpcTimes.Times>> rpcTimes = new LinkedHashMap<>();
  private long jobMillis;

  public TrainSuite(Path runDir, ServiceJars jars, boolean quick, boolean profile) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
    this.profile = profile;
  }

  /** The first pass of the steady state: the passes before it are the warm-up. */
  static int firstSteadyPass(int passes) {
    return Math.max(1, passes / 2);
  }

  /** Rates and final quality of one setup. */
  record Outcome(
      double steady, double wholeJob, double quality, double pass0, List<Double> perPass) {}

  public void run(Report report) throws Exception {
    Path data = runDir.resolve("train").resolve("data");
    List<Workload> workloads =
        quick
            ? List.of(Workload.softmax(data, true))
            : List.of(
                Workload.softmax(data, false), Workload.mlp5m(data), Workload.ctr(data, false));
    int[][] shapes = quick ? new int[][] {{1, 1}, {2, 2}} : new int[][] {{1, 1}, {2, 2}, {4, 4}};
    Report.Table t =
        report.table(
            "Training",
            "Samples per second, steady state (second half of the passes) and whole job (launch to"
                + " end of the last pass), each against one JVM measured the same way; plain SGD,"
                + " asynchronous",
            "workload",
            "setup",
            "steady samples/s",
            "steady vs single",
            "whole-job samples/s",
            "whole job vs single",
            "pass 0 samples/s",
            "final accuracy or AUC");
    Map<String, Object> json = new LinkedHashMap<>();
    for (Workload w : workloads) {
      System.out.printf(Locale.ROOT, "train %s: %s%n", w.name(), w.title());
      Outcome single = single(w);
      t.row(
          w.title(),
          "single JVM, no RPC",
          single.steady(),
          1.0,
          single.wholeJob(),
          1.0,
          single.pass0(),
          single.quality());
      json.put(w.name() + ".single", single);
      for (int[] shape : shapes) {
        String pxt = shape[0] + "x" + shape[1];
        Outcome d = distributed(w, shape[0], shape[1]);
        t.row(
            w.title(),
            shape[0] + " + " + shape[1],
            d.steady(),
            d.steady() / single.steady(),
            d.wholeJob(),
            d.wholeJob() / single.wholeJob(),
            d.pass0(),
            d.quality());
        json.put(w.name() + "." + pxt, d);
        String baseline =
            w.name()
                + " in one JVM ("
                + Report.fmt(single.steady())
                + " samples/s steady, "
                + Report.fmt(single.wholeJob())
                + " whole job; "
                + w.metric()
                + " "
                + Report.fmt(single.quality())
                + " vs "
                + Report.fmt(d.quality())
                + ")";
        report.ratio(
            "train_" + w.name() + "_" + pxt + "_vs_single_jvm",
            d.steady() / single.steady(),
            steadyTarget(w.name(), shape[0]),
            baseline);
        report.ratio(
            "train_" + w.name() + "_" + pxt + "_whole_job_vs_single_jvm",
            d.wholeJob() / single.wholeJob(),
            w.name().equals("softmax") && shape[0] == 1 ? Target.atLeast(0.5) : null,
            baseline);
        if (w.name().equals("softmax") && shape[0] <= 2) {
          // the names of earlier runs
          report.ratio(
              "train_" + pxt + "_vs_single_jvm", d.steady() / single.steady(), null, baseline);
        }
        System.out.printf(
            Locale.ROOT,
            "train %s %s: steady %.0f samples/s (single %.0f), whole job %.0f (single %.0f), %s"
                + " %.4f (single %.4f)%n",
            w.name(),
            pxt,
            d.steady(),
            single.steady(),
            d.wholeJob(),
            single.wholeJob(),
            w.metric(),
            d.quality(),
            single.quality());
      }
    }
    report.extra("training", json);
    Report.Table rpc =
        report.table(
            "Training",
            "Where the softmax 1 + 1 job's time goes: server-side time per RPC method over the"
                + " whole job (all passes: "
                + Report.fmt(jobMillis / 1000.0)
                + " s of passes)",
            "service",
            "method",
            "calls",
            "total s",
            "mean ms");
    rpcTimes.forEach(
        (svc, m) ->
            m.forEach(
                (method, tm) ->
                    rpc.row(
                        svc,
                        method,
                        (long) tm.calls(),
                        tm.seconds(),
                        tm.calls() == 0 ? Double.NaN : 1000 * tm.seconds() / tm.calls())));
    String[] who = {"pserver", "trainer"};
    for (int i = 0; i < profiles.size(); i++) {
      Path f = profiles.get(i);
      try {
        JfrSummary js = JfrSummary.read(f);
        for (String l :
            js.markdown(who[i] + " process, softmax 1 + 1, the measured passes (JFR)")) {
          report.note("Profile", l);
        }
        report.extra(who[i] + "TrainingProfile", js.json());
      } catch (Exception e) {
        report.note("Profile", who[i] + " recording " + f + " unreadable: " + e);
      }
    }
  }

  /** The steady-state targets of the performance issue. */
  private static Target steadyTarget(String workload, int pservers) {
    if (pservers > 2) {
      return null;
    }
    if (workload.equals("softmax")) {
      return Target.atLeast(0.8);
    }
    return Target.atLeast(pservers == 1 ? 0.7 : 1.0);
  }

  /** The single-JVM baseline, in a JVM of its own with the trainer's JVM options. */
  private Outcome single(Workload w) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(ClusterSpec.defaultJvmOptions(Role.TRAINER));
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SingleJvmTrainer.class.getName());
    cmd.addAll(SingleJvmTrainer.arguments(w));
    long launched = System.nanoTime();
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    List<Double> perPass = new ArrayList<>();
    long steadyRecords = 0;
    double steadySeconds = 0;
    long records = 0;
    Map<String, Double> figures = new LinkedHashMap<>();
    List<String> other = new ArrayList<>();
    try (BufferedReader r =
        new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
      for (String line = r.readLine(); line != null; line = r.readLine()) {
        Matcher m = PASS.matcher(line);
        if (m.matches()) {
          int pass = Integer.parseInt(m.group(1));
          long n = Long.parseLong(m.group(2));
          double secs = Double.parseDouble(m.group(3));
          perPass.add(n / secs);
          records += n;
          if (pass >= firstSteadyPass(w.passes())) {
            steadyRecords += n;
            steadySeconds += secs;
          }
        } else if (line.matches("(accuracy|auc)=[-0-9.NaE]+")) {
          String[] kv = line.split("=");
          figures.put(kv[0], Double.parseDouble(kv[1]));
        } else {
          other.add(line);
        }
      }
    }
    if (!p.waitFor(10, TimeUnit.MINUTES) || p.exitValue() != 0 || perPass.isEmpty()) {
      p.destroyForcibly();
      throw new IllegalStateException(
          "the single-JVM trainer of " + w.name() + " failed: " + String.join("\n", other));
    }
    double whole = records / ((System.nanoTime() - launched) / 1e9);
    return new Outcome(
        steadyRecords / steadySeconds,
        whole,
        figures.getOrDefault(w.metric(), Double.NaN),
        perPass.get(0),
        perPass);
  }

  /** The test AUC the master reported for {@code pass} (NaN when none). */
  private static double evalAuc(JobStatusView status, int pass) {
    for (var p : status.json().path("passes")) {
      if (p.path("pass").asInt(-1) == pass && p.path("evalAuc").isNumber()) {
        return p.path("evalAuc").asDouble();
      }
    }
    return Double.NaN;
  }

  private static final Pattern PASS =
      Pattern.compile("pass=([0-9]+) records=([0-9]+) seconds=([0-9.E-]+)");

  private static Map<String, ServerRpcTimes.Times> scrapeQuietly(int port) {
    try {
      return ServerRpcTimes.scrape(port);
    } catch (Exception e) {
      System.out.println("could not read metrics on port " + port + ": " + e);
      return Map.of();
    }
  }

  private Outcome distributed(Workload w, int pservers, int trainers) throws Exception {
    Path dir = runDir.resolve("train").resolve(w.name() + "-" + pservers + "x" + trainers);
    ClusterSpec.Builder b =
        jars.spec(dir)
            .job("bench-" + w.name())
            .masters(1)
            .pservers(pservers)
            .trainers(trainers)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(w.passes()))
            .property(
                Role.MASTER,
                "paramserver.master.chunks-per-task",
                Integer.toString(w.chunksPerTask()))
            .property(Role.TRAINER, "paramserver.trainer.train-data", w.trainGlob())
            .property(Role.TRAINER, "paramserver.trainer.test-data", w.testGlob())
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(240));
    w.trainerProperties()
        .forEach((k, v) -> b.property(Role.TRAINER, "paramserver.trainer." + k, v));
    boolean observed = w.name().equals("softmax") && pservers == 1 && trainers == 1;
    boolean recording = observed && profile;
    Path trainerJfr = dir.resolve("trainer.jfr");
    Path pserverJfr = dir.resolve("pserver.jfr");
    ClusterSpec spec = b.build();
    // the services' class-data archives are made once per build: not part of a job's time
    LocalCluster.prepareClassData(spec);
    long launchedMs = System.currentTimeMillis();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      if (recording) {
        // profile the measured passes only; the trainer dumps when it exits
        int first = firstSteadyPass(w.passes());
        cluster.awaitJob(
            s -> s.pass() >= first || s.isFinished() || s.isFailed(), Duration.ofMinutes(4));
        WireSuite.jcmd(
            cluster.process(Role.TRAINER, 0).pid(),
            "JFR.start",
            "name=bench",
            "settings=profile",
            "dumponexit=true",
            "filename=" + trainerJfr);
        WireSuite.jcmd(
            cluster.process(Role.PSERVER, 0).pid(), "JFR.start", "name=bench", "settings=profile");
      }
      JobStatusView end = cluster.awaitJobEnd(Duration.ofMinutes(10));
      if (recording) {
        WireSuite.jcmd(
            cluster.process(Role.PSERVER, 0).pid(),
            "JFR.dump",
            "name=bench",
            "filename=" + pserverJfr);
      }
      if (observed) {
        rpcTimes.put("master", scrapeQuietly(cluster.process(Role.MASTER, 0).httpPort()));
        rpcTimes.put("pserver", scrapeQuietly(cluster.process(Role.PSERVER, 0).httpPort()));
        jobMillis = end.passes().stream().mapToLong(p -> p.endedMs() - p.startedMs()).sum();
      }
      if (!end.isFinished()) {
        throw new IllegalStateException(
            "training job "
                + w.name()
                + " "
                + pservers
                + "x"
                + trainers
                + " did not finish: "
                + end);
      }
      List<Double> perPass = new ArrayList<>();
      long records = 0;
      long steadyRecords = 0;
      long steadyMillis = 0;
      long lastEnd = launchedMs;
      double quality = Double.NaN;
      for (JobStatusView.PassView p : end.passes()) {
        long ms = Math.max(1, p.endedMs() - p.startedMs());
        perPass.add(p.records() * 1000.0 / ms);
        records += p.records();
        lastEnd = Math.max(lastEnd, p.endedMs());
        if (p.evalReports() > 0) {
          quality = w.metric().equals("auc") ? evalAuc(end, p.pass()) : p.evalAccuracy();
        }
        if (p.pass() >= firstSteadyPass(w.passes())) {
          steadyRecords += p.records();
          steadyMillis += ms;
        }
      }
      if (recording) {
        cluster.close(); // the trainer's recording is written as it exits
        profiles.add(pserverJfr);
        profiles.add(trainerJfr);
      }
      return new Outcome(
          steadyRecords * 1000.0 / Math.max(1, steadyMillis),
          records * 1000.0 / Math.max(1, lastEnd - launchedMs),
          quality,
          perPass.isEmpty() ? Double.NaN : perPass.get(0),
          perPass);
    }
  }
}
