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
import dev.paramserver.models.demo.DemoData;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Training throughput: the demo job (softmax regression on the demo data, plain SGD, batch 64,
 * asynchronous) on 1 pserver + 1 trainer and on 2 + 2 processes, against the same training in one
 * JVM. Samples/s are records / (end - start) of each pass as the master reports them; pass 0 is the
 * warm-up and is left out.
 */
public final class TrainSuite {
  static final int BATCH = 64;
  static final String LR = "0.1";

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;
  private final List<Path> profiles = new ArrayList<>();
  private final Map<String, Map<String, ServerRpcTimes.Times>> rpcTimes = new LinkedHashMap<>();
  private long jobMillis;

  public TrainSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
  }

  public void run(Report report) throws Exception {
    Path data = runDir.resolve("train").resolve("data");
    DemoData.Result demo =
        DemoData.generate(data, DemoData.Options.builder().train(quick ? 10000 : 20000).build());
    String trainGlob = data.resolve("train-*.recordio").toString();
    String testGlob = data.resolve("test-*.recordio").toString();
    int passes = 3;

    SingleJvmTrainer.Result single =
        SingleJvmTrainer.run(
            List.of(trainGlob), List.of(testGlob), passes + 2, BATCH, Float.parseFloat(LR));
    // leave out the warm-up passes of the JIT
    double singleRate = single.rateFrom(2);
    System.out.printf(
        Locale.ROOT,
        "train single JVM: %.0f samples/s, accuracy %.3f%n",
        singleRate,
        single.accuracy());

    Report.Table t =
        report.table(
            "Training (demo data, softmax, SGD, batch 64, async)",
            "Samples per second (passes after the first)",
            "setup",
            "samples/s",
            "vs single JVM",
            "passes measured",
            "records/pass",
            "pass 0 samples/s",
            "final accuracy");
    t.row(
        "single JVM, no RPC",
        singleRate,
        1.0,
        single.samplesPerSec().size() - 2,
        single.records().get(0),
        single.samplesPerSec().get(0),
        single.accuracy());
    Map<String, Object> json = new LinkedHashMap<>();
    json.put("singleJvmPerPass", single.samplesPerSec());
    for (int[] shape : new int[][] {{1, 1}, {2, 2}}) {
      Distributed d = distributed(shape[0], shape[1], trainGlob, testGlob, passes);
      String name =
          shape[0]
              + " pserver"
              + (shape[0] > 1 ? "s" : "")
              + " + "
              + shape[1]
              + " trainer"
              + (shape[1] > 1 ? "s" : "");
      t.row(
          name,
          d.rate,
          d.rate / singleRate,
          d.measuredPasses,
          d.recordsPerPass,
          d.pass0Rate,
          d.accuracy);
      json.put(shape[0] + "x" + shape[1] + "PerPass", d.perPass);
      report.ratio(
          "train_" + shape[0] + "x" + shape[1] + "_vs_single_jvm",
          d.rate / singleRate,
          shape[0] == 1 ? Target.atLeast(0.6) : null,
          "same model, data, batch size and SGD in one JVM without RPC ("
              + Report.fmt(singleRate)
              + " samples/s)");
      System.out.printf(Locale.ROOT, "train %s: %.0f samples/s%n", name, d.rate);
    }
    json.put(
        "demoData",
        Map.of(
            "train",
            demo.trainRecords(),
            "test",
            demo.testRecords(),
            "features",
            demo.features(),
            "classes",
            demo.classes()));
    report.extra("training", json);
    Report.Table rpc =
        report.table(
            "Training (demo data, softmax, SGD, batch 64, async)",
            "Where the 1 + 1 job's time goes: server-side time per RPC method over the whole job"
                + " (all passes: "
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
        for (String l : js.markdown(who[i] + " process, training 1 + 1 from pass 1 on (JFR)")) {
          report.note("Profile", l);
        }
        report.extra(who[i] + "TrainingProfile", js.json());
      } catch (Exception e) {
        report.note("Profile", who[i] + " recording " + f + " unreadable: " + e);
      }
    }
  }

  private static Map<String, ServerRpcTimes.Times> scrapeQuietly(int port) {
    try {
      return ServerRpcTimes.scrape(port);
    } catch (Exception e) {
      System.out.println("could not read metrics on port " + port + ": " + e);
      return Map.of();
    }
  }

  record Distributed(
      double rate,
      int measuredPasses,
      long recordsPerPass,
      double pass0Rate,
      double accuracy,
      List<Double> perPass) {}

  private Distributed distributed(
      int pservers, int trainers, String trainGlob, String testGlob, int passes) throws Exception {
    Path dir = runDir.resolve("train").resolve(pservers + "x" + trainers);
    ClusterSpec spec =
        jars.spec(dir)
            .job("bench-train")
            .masters(1)
            .pservers(pservers)
            .trainers(trainers)
            .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passes))
            .property(Role.TRAINER, "paramserver.trainer.train-data", trainGlob)
            .property(Role.TRAINER, "paramserver.trainer.test-data", testGlob)
            .property(Role.TRAINER, "paramserver.trainer.model", "softmax")
            .property(Role.TRAINER, "paramserver.trainer.optimizer", "sgd")
            .property(Role.TRAINER, "paramserver.trainer.learning-rate", LR)
            .property(Role.TRAINER, "paramserver.trainer.batch-size", Integer.toString(BATCH))
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(180))
            .build();
    boolean profile = pservers == 1 && trainers == 1;
    Path trainerJfr = dir.resolve("trainer.jfr");
    Path pserverJfr = dir.resolve("pserver.jfr");
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      if (profile) {
        // profile the measured passes only: from pass 1 on; the trainer dumps when it exits
        cluster.awaitJob(
            s -> s.pass() >= 1 || s.isFinished() || s.isFailed(), Duration.ofMinutes(4));
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
      JobStatusView end = cluster.awaitJobEnd(Duration.ofMinutes(quick ? 4 : 6));
      if (profile) {
        WireSuite.jcmd(
            cluster.process(Role.PSERVER, 0).pid(),
            "JFR.dump",
            "name=bench",
            "filename=" + pserverJfr);
        rpcTimes.put("master", scrapeQuietly(cluster.process(Role.MASTER, 0).httpPort()));
        rpcTimes.put("pserver", scrapeQuietly(cluster.process(Role.PSERVER, 0).httpPort()));
        jobMillis = end.passes().stream().mapToLong(p -> p.endedMs() - p.startedMs()).sum();
      }
      if (!end.isFinished()) {
        throw new IllegalStateException(
            "training job " + pservers + "x" + trainers + " did not finish: " + end);
      }
      List<Double> perPass = new ArrayList<>();
      long records = 0;
      long millis = 0;
      double pass0 = Double.NaN;
      double accuracy = Double.NaN;
      long recordsPerPass = 0;
      for (JobStatusView.PassView p : end.passes()) {
        long ms = Math.max(1, p.endedMs() - p.startedMs());
        double rate = p.records() * 1000.0 / ms;
        perPass.add(rate);
        if (p.evalReports() > 0) {
          accuracy = p.evalAccuracy();
        }
        if (p.pass() == 0) {
          pass0 = rate;
          recordsPerPass = p.records();
        } else {
          records += p.records();
          millis += ms;
        }
      }
      if (profile) {
        cluster.close(); // the trainer's recording is written as it exits
        profiles.add(pserverJfr);
        profiles.add(trainerJfr);
      }
      int measured = Math.max(0, end.passes().size() - 1);
      return new Distributed(
          records * 1000.0 / Math.max(1, millis),
          measured,
          recordsPerPass,
          pass0,
          accuracy,
          perPass);
    }
  }
}
