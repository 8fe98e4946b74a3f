package dev.paramserver.bench.serving;

import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.report.Report;
import dev.paramserver.bench.report.Report.Target;
import dev.paramserver.bench.train.CtrData;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.rpc.Channels;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * Serving while a model trains: a 1 + 1 click-through job (sparse-lr, embedding 8) with one serving
 * replica process ({@code run-local --serving 1}). Lookups of 100 Zipf ids of the embedding table
 * at {@value #RATE} requests/s, open-loop from a thread pool of this JVM, against the same lookups
 * on a replica of the same table followed in this JVM ({@link InJvmReplica}); and freshness, from a
 * push's acknowledgement to the answer of a lookup that asks for the version holding it ({@link
 * Freshness}).
 */
public final class ServingSuite {
  static final int RATE = 1_000;
  static final int IDS = 100;
  static final String TABLE = "emb";
  static final int WIDTH = 8;
  static final int[] PREDICT_SIZES = {1, 256};
  // the pass the job reaches before the lookups' warm-up: its JIT warm-up is over by then
  static final int STEADY_PASS = 8;
  private static final String JOB = "bench-serving";

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;

  public ServingSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
  }

  public void run(Report report) throws Exception {
    Path dir = runDir.resolve("serving");
    CtrData ctr = new CtrData(10_000_000L);
    ctr.write(dir.resolve("data"), quick ? 40_000 : 60_000, 2_000, 4);
    List<LookupRequest> requests = requests(ctr, 512);
    // the replica process and this JVM still compile their call paths well into the open loop:
    // with 10 s of warm-up, C2 made 104, 35, 25 and 15 compilations in the replica and 60, 53, 16
    // and 5 in this JVM in each 5 s of the measured window (-Xlog:jit+compilation), each a burst
    // of 20 to 60 ms of a core that the other process's lookups waited behind
    Duration warm = Duration.ofSeconds(quick ? 10 : 20);
    Duration measured = Duration.ofSeconds(quick ? 10 : 20);
    OpenLoop.Result wire;
    GcPauses.Reading replicaPauses;
    GcPauses.Reading clientPauses;
    OpenLoop.Result inJvm;
    Freshness.Result fresh;
    // predictions of 1 and of 256 examples: over gRPC, then in this JVM
    Map<Integer, OpenLoop.Result[]> predicts = new LinkedHashMap<>();
    Duration predictFor = Duration.ofSeconds(quick ? 5 : 10);
    ClusterSpec spec = spec(dir).build();
    System.out.println(
        "serving: the trainer and the pserver at nice "
            + spec.niceness(Role.TRAINER)
            + ", the serving replica at nice "
            + spec.niceness(Role.SERVING));
    try (LocalCluster cluster = new LocalCluster(spec)) {
      cluster.start();
      cluster.awaitReady(Role.SERVING, 0, Duration.ofMinutes(4));
      String serving = "127.0.0.1:" + cluster.process(Role.SERVING, 0).grpcPort();
      String pserver = "127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort();
      ManagedChannel ch = Channels.forAddress(serving);
      try {
        Freshness.awaitTable(ch, TABLE, WIDTH, Duration.ofMinutes(4));
        // measured once training is steady: in its first passes the job's trainer and pserver
        // compile their hot paths and speed up (about 10,000 to 23,000 samples/s over passes 2 to
        // 6), and lookups measured then had a p99 of 125 ms against 28 ms ten seconds later
        cluster.awaitJob(job -> job.pass() >= (quick ? 4 : STEADY_PASS), Duration.ofMinutes(4));
        var stub = ServingGrpc.newFutureStub(ch);
        // the replica process and this JVM compile their lookup paths in the warm-up
        OpenLoop.run(
            RATE,
            warm,
            Duration.ofSeconds(10),
            i -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(requests.get(i % 512)));
        int http = cluster.process(Role.SERVING, 0).httpPort();
        GcPauses.Reading replicaBefore = GcPauses.ofService(http);
        // this JVM allocates about 12 KB per call (its stubs, calls and answers): a collection
        // now leaves its young generation empty for the measured window, so that the load
        // generator's own pauses stay out of the figures as far as its heap allows (its pauses in
        // the window are reported beside the replica's)
        System.gc();
        GcPauses.Reading clientBefore = GcPauses.ofThisJvm();
        wire =
            OpenLoop.run(
                RATE,
                measured,
                Duration.ofSeconds(10),
                i -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(requests.get(i % 512)));
        replicaPauses = GcPauses.ofService(http).since(replicaBefore);
        clientPauses = GcPauses.ofThisJvm().since(clientBefore);
        writeLatencies(dir.resolve("lookups.csv"), wire);
        for (int n : PREDICT_SIZES) {
          List<List<Example>> batches = batches(ctr, n);
          Predicts.overGrpc(ch, batches, Duration.ofSeconds(2));
          predicts.put(n, new OpenLoop.Result[] {Predicts.overGrpc(ch, batches, predictFor), null});
        }
        // the in-JVM replica follows only from here: while the process is measured, this JVM
        // applies no records of its own
        try (InJvmReplica local =
            InJvmReplica.follow(cluster.etcdEndpoint(), JOB, cluster.adminToken())) {
          local.awaitTable(TABLE, Duration.ofMinutes(2));
          local.lookups(requests, warm);
          inJvm = local.lookups(requests, measured);
          for (int n : PREDICT_SIZES) {
            List<List<Example>> batches = batches(ctr, n);
            Predicts.inJvm(local.predictions(), batches, Duration.ofSeconds(2));
            predicts.get(n)[1] = Predicts.inJvm(local.predictions(), batches, predictFor);
          }
        }
        fresh = Freshness.measure(pserver, ch, quick ? 50 : 100, Duration.ofMillis(200));
      } finally {
        Channels.close(ch);
      }
    }
    report(report, wire, inJvm, fresh, replicaPauses, clientPauses);
    reportPredicts(report, predicts);
  }

  /**
   * Each answered lookup's planned send time (ms since the epoch), latency and send lag (how late
   * the sender thread sent it), in the order sent: to line slow calls up with the processes'
   * collector logs, recordings and scheduler traces, and to tell the client's delays from the
   * replica's.
   */
  private static void writeLatencies(Path file, OpenLoop.Result r) throws IOException {
    StringBuilder sb = new StringBuilder("planned_epoch_ms,latency_ms,send_lag_ms\n");
    for (int i = 0; i < r.latenciesMs().length; i++) {
      sb.append(r.plannedMs()[i])
          .append(',')
          .append(String.format(Locale.ROOT, "%.3f,%.3f", r.latenciesMs()[i], r.sendLagMs()[i]))
          .append('\n');
    }
    Files.writeString(file, sb);
  }

  /** 16 batches of {@code n} examples drawn as the training data is. */
  private static List<List<Example>> batches(CtrData ctr, int n) {
    List<List<Example>> out = new ArrayList<>();
    for (int i = 0; i < 16; i++) {
      out.add(ctr.examples(n, 100 + i));
    }
    return out;
  }

  private static void reportPredicts(Report report, Map<Integer, OpenLoop.Result[]> predicts) {
    Report.Table t =
        report.table(
            "Serving",
            "Predict (sparse-lr) while a 1 + 1 click-through job trains, one thread, closed loop",
            "examples",
            "where",
            "calls/s",
            "errors",
            "p50 ms",
            "p99 ms");
    Map<String, Object> extra = new LinkedHashMap<>();
    predicts.forEach(
        (n, r) -> {
          String[] where = {"serving replica process, gRPC", "replica followed in this JVM"};
          for (int k = 0; k < 2; k++) {
            t.row(
                n,
                where[k],
                r[k].qps(),
                r[k].errors(),
                r[k].percentileMs(50),
                r[k].percentileMs(99));
          }
          extra.put("predict" + n + "_qps", r[0].qps());
          extra.put("predict" + n + "_p50_ms", r[0].percentileMs(50));
          extra.put("predict" + n + "_p99_ms", r[0].percentileMs(99));
          extra.put("predict" + n + "_in_jvm_p99_ms", r[1].percentileMs(99));
          System.out.println(
              String.format(
                  Locale.ROOT,
                  "serving: predict of %d: %.0f/s p50 %.3f p99 %.3f ms (in JVM %.0f/s p99 %.3f ms)",
                  n,
                  r[0].qps(),
                  r[0].percentileMs(50),
                  r[0].percentileMs(99),
                  r[1].qps(),
                  r[1].percentileMs(99)));
        });
    report.extra("serving_predict", extra);
  }

  private ClusterSpec.Builder spec(Path dir) {
    ClusterSpec.Builder b =
        jars.spec(dir.resolve("cluster"))
            .job(JOB)
            .masters(1)
            .pservers(1)
            .trainers(1)
            .serving(1)
            // more passes than the measurement lasts: the job trains throughout, and the
            // cluster is stopped after it
            .property(Role.MASTER, "paramserver.master.passes", "1000")
            .property(Role.MASTER, "paramserver.master.chunks-per-task", "4")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .property(
                Role.TRAINER,
                "paramserver.trainer.train-data",
                dir.resolve("data").resolve("train-*.recordio").toString())
            .property(
                Role.TRAINER,
                "paramserver.trainer.test-data",
                dir.resolve("data").resolve("test-*.recordio").toString())
            .startTimeout(Duration.ofSeconds(240));
    // the trainer's and pserver's nice value (by default ClusterSpec's beside serving replicas):
    // 0 measures the replica competing with training at the same priority
    String nice = System.getenv("BENCH_SERVING_TRAINING_NICE");
    if (nice != null && !nice.isBlank()) {
      b.trainingNiceness(Integer.parseInt(nice.trim()));
    }
    // other JVM options for the replica process (a collector, its log, a recording), replacing
    // the role's own: to compare collectors and find where the tail comes from
    String options = System.getenv("BENCH_SERVING_JVM");
    if (options != null && !options.isBlank()) {
      b.jvmOptions(Role.SERVING, List.of(options.trim().split("\\s+")));
    }
    Map.of(
            "model", "sparse-lr",
            "embedding-width", Integer.toString(WIDTH),
            "optimizer", "sgd",
            "learning-rate", "0.05",
            "batch-size", "256")
        .forEach((k, v) -> b.property(Role.TRAINER, "paramserver.trainer." + k, v));
    return b;
  }

  /** {@code n} lookups of {@value #IDS} ids each, drawn as the training data draws its ids. */
  static List<LookupRequest> requests(CtrData ctr, int n) {
    SplittableRandom r = new SplittableRandom(3);
    long[] record = new long[CtrData.FIELDS];
    List<LookupRequest> list = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      LookupRequest.Builder b = LookupRequest.newBuilder().setTable(TABLE).setWidth(WIDTH);
      while (b.getIdsCount() < IDS) {
        ctr.ids(r, record, 0);
        for (int f = 0; f < CtrData.FIELDS && b.getIdsCount() < IDS; f++) {
          b.addIds(record[f]);
        }
      }
      list.add(b.build());
    }
    return list;
  }

  private static void report(
      Report report,
      OpenLoop.Result wire,
      OpenLoop.Result inJvm,
      Freshness.Result fresh,
      GcPauses.Reading replicaPauses,
      GcPauses.Reading clientPauses) {
    Report.Table t =
        report.table(
            "Serving",
            "Lookup of "
                + IDS
                + " ids (table '"
                + TABLE
                + "', width "
                + WIDTH
                + ") while a 1 + 1 click-through job trains",
            "where",
            "offered/s",
            "answered/s",
            "errors",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms");
    t.row(
        "serving replica process, gRPC, open loop",
        wire.offeredPerSecond(),
        wire.qps(),
        wire.errors(),
        wire.percentileMs(50),
        wire.percentileMs(99),
        wire.percentileMs(99.9),
        wire.percentileMs(100));
    t.row(
        "replica followed in this JVM, one thread",
        "closed loop",
        inJvm.qps(),
        inJvm.errors(),
        inJvm.percentileMs(50),
        inJvm.percentileMs(99),
        inJvm.percentileMs(99.9),
        inJvm.percentileMs(100));
    Report.Table g =
        report.table(
            "Serving",
            "Collector pauses during the open-loop lookups",
            "process",
            "pauses",
            "total ms",
            "mean ms");
    g.row(
        "serving replica",
        replicaPauses.pauses(),
        replicaPauses.seconds() * 1000,
        replicaPauses.meanMs());
    g.row(
        "bench JVM (client)",
        clientPauses.pauses(),
        clientPauses.seconds() * 1000,
        clientPauses.meanMs());
    Report.Table f =
        report.table(
            "Serving",
            "Freshness: a push's acknowledgement to the answer of a lookup at its min_version",
            "samples",
            "p50 ms",
            "p99 ms",
            "max ms");
    f.row(fresh.samples(), fresh.percentileMs(50), fresh.percentileMs(99), fresh.maxMs());
    double p99 = wire.percentileMs(99);
    report.ratio(
        "serving_lookup100_p99_ms",
        p99,
        Target.atMost(5),
        "p99 ms of a lookup of 100 ids from a serving replica process at "
            + RATE
            + " requests/s, open loop, while a 1 + 1 job trains");
    report.ratio(
        "serving_lookup100_p99_vs_in_jvm",
        p99 / inJvm.percentileMs(99),
        null,
        "p99 of the same lookups on a replica followed in the bench's JVM");
    report.ratio(
        "serving_freshness_p99_ms",
        fresh.percentileMs(99),
        Target.atMost(1000),
        "p99 ms from a push's acknowledgement to the served version holding it (1 + 1 job"
            + " training)");
    Map<String, Object> extra = new LinkedHashMap<>();
    extra.put("wire_qps", wire.qps());
    extra.put("wire_errors", wire.errors());
    extra.put("wire_p50_ms", wire.percentileMs(50));
    extra.put("wire_p99_ms", p99);
    extra.put("wire_p999_ms", wire.percentileMs(99.9));
    extra.put("wire_max_ms", wire.percentileMs(100));
    extra.put("wire_send_lag_p99_ms", OpenLoop.percentile(wire.sendLagMs(), 99));
    extra.put("wire_send_lag_max_ms", OpenLoop.percentile(wire.sendLagMs(), 100));
    extra.put("replica_gc_pauses", replicaPauses.pauses());
    extra.put("replica_gc_pause_ms", replicaPauses.seconds() * 1000);
    extra.put("client_gc_pauses", clientPauses.pauses());
    extra.put("client_gc_pause_ms", clientPauses.seconds() * 1000);
    extra.put("in_jvm_p50_ms", inJvm.percentileMs(50));
    extra.put("in_jvm_p99_ms", inJvm.percentileMs(99));
    extra.put("freshness_p50_ms", fresh.percentileMs(50));
    extra.put("freshness_p99_ms", fresh.percentileMs(99));
    report.extra("serving", extra);
    System.out.println(
        String.format(
            Locale.ROOT,
            "serving: lookup100 p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms at %.0f/s (sent late by"
                + " p99 %.3f max %.3f ms; in JVM p99 %.4f ms); freshness p50 %.1f p99 %.1f ms; collector pauses: replica %d (%.0f"
                + " ms), client %d (%.0f ms)",
            wire.percentileMs(50),
            p99,
            wire.percentileMs(99.9),
            wire.percentileMs(100),
            wire.qps(),
            OpenLoop.percentile(wire.sendLagMs(), 99),
            OpenLoop.percentile(wire.sendLagMs(), 100),
            inJvm.percentileMs(99),
            fresh.percentileMs(50),
            fresh.percentileMs(99),
            replicaPauses.pauses(),
            replicaPauses.seconds() * 1000,
            clientPauses.pauses(),
            clientPauses.seconds() * 1000));
  }
}
