package dev.paramserver.bench.train;

import dev.paramserver.bench.cluster.CheckpointDirs;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.cpu.CpuSampler;
import dev.paramserver.bench.cpu.CpuWindow;
import dev.paramserver.bench.train.Rounds.Shape;
import dev.paramserver.bench.wire.WireSuite;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.LocalClusterException;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import dev.paramserver.testsupport.DelayLine;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * One distributed training job of a workload on a local cluster (etcd, a master, pservers and
 * trainers as processes on 127.0.0.1), from launch to the end of its last pass, with the instant
 * its first task was handed out ({@link FirstTaskWatch}).
 */
final class DistributedJob {
  /** The trainer's training thread, as it names it. */
  static final String TRAINER_THREAD = "trainer-loop";

  private final Path runDir;
  private final ServiceJars jars;

  DistributedJob(Path runDir, ServiceJars jars) {
    this.runDir = runDir;
    this.jars = jars;
  }

  /**
   * What an observed job leaves besides its figures: the server-side time per RPC method of its
   * master and first pserver, its first trainer's push round trips ({@link TrainerPushTimes}), the
   * time of its passes and, when {@code record}, JFR recordings of its first pserver and trainer
   * over the measured passes.
   */
  static final class Observation {
    final boolean record;
    final Map<String, Map<String, ServerRpcTimes.Times>> rpcTimes = new LinkedHashMap<>();
    final List<Path> profiles = new ArrayList<>();
    long jobMillis;

    Observation(boolean record) {
      this.record = record;
    }
  }

  /** Runs {@code w} on {@code shape}; {@code observe} (or null) collects the extras. */
  Outcome run(Workload w, Shape shape, int round, Observation observe) throws Exception {
    return run(w, shape, "round" + (round + 1), Map.of(), observe);
  }

  /**
   * Runs {@code w} on {@code shape} in the run folder {@code <workload>-<shape>-<label>}, its
   * trainers given {@code trainerProperties} (keys under {@code paramserver.trainer.}) besides the
   * workload's; {@code observe} (or null) collects the extras.
   */
  Outcome run(
      Workload w,
      Shape shape,
      String label,
      Map<String, String> trainerProperties,
      Observation observe)
      throws Exception {
    return run(w, shape, label, trainerProperties, observe, null);
  }

  /**
   * {@link #run(Workload, Shape, String, Map, Observation)} with the trainers' (and the master's)
   * traffic to the pserver through {@code line} (null: direct): the pserver advertises the line's
   * port, and the line forwards to the pserver's gRPC port. One pserver only.
   */
  Outcome run(
      Workload w,
      Shape shape,
      String label,
      Map<String, String> trainerProperties,
      Observation observe,
      DelayLine line)
      throws Exception {
    if (line != null && shape.pservers() != 1) {
      throw new IllegalArgumentException(
          "a delay line routes one pserver, not " + shape.pservers());
    }
    Path dir = runDir.resolve("train").resolve(w.name() + "-" + shape.id() + "-" + label);
    ClusterSpec.Builder b =
        jars.spec(dir)
            .job("bench-" + w.name())
            .masters(1)
            .pservers(shape.pservers())
            .trainers(shape.trainers())
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(w.passes()))
            .property(
                Role.MASTER,
                "paramserver.master.chunks-per-task",
                Integer.toString(w.chunksPerTask()))
            .property(Role.TRAINER, "paramserver.trainer.train-data", w.trainGlob())
            .property(Role.TRAINER, "paramserver.trainer.test-data", w.testGlob())
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .jvmOptions(Role.PSERVER, w.jvmOptions(Role.PSERVER))
            .jvmOptions(Role.TRAINER, w.jvmOptions(Role.TRAINER))
            .startTimeout(Duration.ofSeconds(240));
    w.trainerProperties()
        .forEach((k, v) -> b.property(Role.TRAINER, "paramserver.trainer." + k, v));
    trainerProperties.forEach((k, v) -> b.property(Role.TRAINER, "paramserver.trainer." + k, v));
    if (line != null) {
      b.property(Role.PSERVER, "paramserver.pserver.advertise-port", Integer.toString(line.port()));
    }
    ClusterSpec spec = b.build();
    // the services' class-data archives are made once per build: not part of a job's time
    LocalCluster.prepareClassData(spec);
    try {
      return run(w, shape, spec, dir, observe, line);
    } finally {
      // a 5M-parameter job logs gigabytes of pushes; a section runs many jobs
      CheckpointDirs.drop(dir);
    }
  }

  private Outcome run(
      Workload w, Shape shape, ClusterSpec spec, Path dir, Observation observe, DelayLine line)
      throws Exception {
    boolean recording = observe != null && observe.record;
    Path trainerJfr = dir.resolve("trainer.jfr");
    Path pserverJfr = dir.resolve("pserver.jfr");
    long launchedMs = System.currentTimeMillis();
    long launchedNanos = System.nanoTime();
    try (LocalCluster cluster = new LocalCluster(spec);
        FirstTaskWatch firstTask = FirstTaskWatch.start(cluster, launchedNanos);
        CpuSampler sampler = CpuSampler.start();
        WarmupWatch warmup = WarmupWatch.start(cluster, sampler)) {
      if (line != null) {
        line.target(() -> cluster.process(Role.PSERVER, 0).grpcPort());
      }
      cluster.start();
      watch(sampler, cluster);
      TrainerPushTimes pushTimes =
          observe == null
              ? null
              : TrainerPushTimes.poll(cluster.process(Role.TRAINER, 0).httpPort());
      if (recording) {
        // profile the measured passes only; the trainer dumps when it exits
        int first = TrainSuite.firstSteadyPass(w.passes());
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
      JobStatusView end = awaitEvaluatedEnd(cluster, w);
      sampler.sampleNow();
      Map<String, Double> tables =
          w.spec().embeddingWidth() > 0 ? tables(cluster, shape) : Map.of();
      if (recording) {
        WireSuite.jcmd(
            cluster.process(Role.PSERVER, 0).pid(),
            "JFR.dump",
            "name=bench",
            "filename=" + pserverJfr);
      }
      if (observe != null) {
        observe.rpcTimes.put("master", scrapeQuietly(cluster.process(Role.MASTER, 0).httpPort()));
        observe.rpcTimes.put("pserver", scrapeQuietly(cluster.process(Role.PSERVER, 0).httpPort()));
        pushTimes.close();
        observe.rpcTimes.put("trainer", pushTimes.last());
        observe.jobMillis = end.passes().stream().mapToLong(p -> p.endedMs() - p.startedMs()).sum();
      }
      if (!end.isFinished()) {
        throw new IllegalStateException(
            "training job " + w.name() + " " + shape.id() + " did not finish: " + end);
      }
      firstTask.close();
      Map<String, Double> startup = new LinkedHashMap<>();
      if (shape.pservers() == 1 && shape.trainers() == 1) {
        startup.putAll(StartupTimeline.read(dir.resolve("logs"), launchedMs));
        startup.putAll(firstTask.cpu()); // "cpu <process>", "cpu jit", "cpu total"
      }
      warmup.close();
      Yardstick.Window window = Yardstick.of(end, warmup.mark(), launchedMs, launchedNanos);
      Map<String, Double> measured = windowFigures(window, sampler);
      Outcome outcome =
          outcome(w, end, launchedMs, firstTask, startup, window, measured).withSparse(tables);
      if (recording) {
        cluster.close(); // the trainer's recording is written as it exits
        observe.profiles.add(pserverJfr);
        observe.profiles.add(trainerJfr);
      }
      return outcome;
    }
  }

  /**
   * Waits until the job ended and, when it finished, until its last pass was evaluated: the master
   * finishes the job once its last task is done, and the elected trainer evaluates the last pass
   * after that, so the job's status at its end may not have that evaluation yet (read then, the
   * click-through job's quality was its second pass's AUC, 0.6951, in some runs and its last
   * pass's, 0.7012, in others).
   */
  static JobStatusView awaitEvaluatedEnd(LocalCluster cluster, Workload w) {
    JobStatusView end = cluster.awaitJobEnd(Duration.ofMinutes(10));
    if (!end.isFinished()) {
      return end;
    }
    try {
      return cluster.awaitJob(
          s -> s.isFailed() || lastPassEvaluated(s, w.passes()), Duration.ofMinutes(2));
    } catch (LocalClusterException e) {
      // the figures without the quality (NaN) rather than an earlier pass's
      System.out.println("the last pass of " + w.name() + " was not evaluated: " + e.getMessage());
      return end;
    }
  }

  private static boolean lastPassEvaluated(JobStatusView s, int passes) {
    List<JobStatusView.PassView> p = s.passes();
    return p.size() >= passes && p.get(passes - 1).evalReports() > 0;
  }

  /**
   * The figures of a finished job, from the passes its master reported; its quality is its last
   * pass's evaluation (NaN when that pass was not evaluated: never an earlier pass's).
   */
  static Outcome outcome(
      Workload w,
      JobStatusView end,
      long launchedMs,
      FirstTaskWatch firstTask,
      Map<String, Double> startup,
      Yardstick.Window window,
      Map<String, Double> measured) {
    List<Double> perPass = new ArrayList<>();
    long records = 0;
    long lastEnd = launchedMs;
    for (JobStatusView.PassView p : end.passes()) {
      long ms = Math.max(1, p.endedMs() - p.startedMs());
      perPass.add(p.records() * 1000.0 / ms);
      records += p.records();
      lastEnd = Math.max(lastEnd, p.endedMs());
    }
    return new Outcome(
        window.rate(),
        records * 1000.0 / Math.max(1, lastEnd - launchedMs),
        lastPassQuality(w.metric(), end),
        perPass.isEmpty() ? Double.NaN : perPass.get(0),
        perPass,
        firstTask.seconds(),
        firstTask.uncertaintySeconds(),
        startup,
        Map.of(),
        Yardstick.passDurationRate(end, w.passes()),
        measured);
  }

  /**
   * The {@code metric} ({@code auc} or {@code accuracy}) of the job's last pass as evaluated; NaN
   * when that pass has no evaluation (never an earlier pass's).
   */
  static double lastPassQuality(String metric, JobStatusView end) {
    List<JobStatusView.PassView> passes = end.passes();
    if (passes.isEmpty() || passes.get(passes.size() - 1).evalReports() == 0) {
      return Double.NaN;
    }
    JobStatusView.PassView last = passes.get(passes.size() - 1);
    return metric.equals("auc") ? evalAuc(end, last.pass()) : last.evalAccuracy();
  }

  /** The job's processes (and etcd, and this JVM: the supervisor) for {@code sampler}. */
  private static void watch(CpuSampler sampler, LocalCluster cluster) {
    for (ProcessInfo p : cluster.processes()) {
      sampler.watch(p.role().id(), p.pid(), p.role() == Role.TRAINER ? TRAINER_THREAD : null);
    }
    sampler.watch("etcd", cluster.etcdPid(), null);
    sampler.watch(CpuWindow.SUPERVISOR, ProcessHandle.current().pid(), null);
  }

  /** The window's own figures and the CPU the sampled processes spent in it. */
  static Map<String, Double> windowFigures(Yardstick.Window window, CpuSampler sampler) {
    Map<String, Double> f = new LinkedHashMap<>();
    f.put("window_seconds", window.seconds());
    f.put("window_records", (double) window.records());
    f.put("window_ahead_records", (double) window.aheadRecords());
    if (window.records() > 0) {
      f.putAll(sampler.window(window.t0Nanos(), window.t1Nanos(), window.records()).figures());
    }
    return f;
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

  /**
   * The rows and bytes of each sparse table, summed over the job's pservers ({@code
   * pserver_rows_<table>}, {@code pserver_bytes_<table>}), and the first pserver's heap in use
   * ({@code pserver_heap_used_bytes}): the {@code pserver_} figures of {@link Outcome#sparse};
   * empty when a pserver cannot be read.
   */
  private static Map<String, Double> tables(LocalCluster cluster, Shape shape) {
    Map<String, Double> out = new TreeMap<>();
    try {
      for (int i = 0; i < shape.pservers(); i++) {
        Map<String, Double> t = PserverTables.scrape(cluster.process(Role.PSERVER, i).httpPort());
        for (Map.Entry<String, Double> e : t.entrySet()) {
          if (!e.getKey().equals("heap_used_bytes")) {
            out.merge("pserver_" + e.getKey(), e.getValue(), Double::sum);
          } else if (i == 0) {
            out.put("pserver_heap_used_bytes", e.getValue());
          }
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Map.of();
    } catch (IOException | RuntimeException e) {
      System.out.println("could not read the pservers' sparse tables: " + e);
      return Map.of();
    }
    return out;
  }

  private static Map<String, ServerRpcTimes.Times> scrapeQuietly(int port) {
    try {
      return ServerRpcTimes.scrape(port);
    } catch (Exception e) {
      System.out.println("could not read metrics on port " + port + ": " + e);
      return Map.of();
    }
  }
}
