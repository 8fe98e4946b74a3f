package dev.paramserver.bench.wire;

import dev.paramserver.bench.cluster.PserverSetup;
import dev.paramserver.bench.cluster.ServiceJars;
import dev.paramserver.bench.cpu.CpuSampler;
import dev.paramserver.bench.kernels.KernelSuite;
import dev.paramserver.bench.report.Report;
import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ReplicaRole;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The cost of the write-ahead log: push throughput of a real pserver process with the log off and
 * with each sync setting ({@code paramserver.pserver.wal.sync} none, batch, always), 4 KiB pushes
 * (per-push cost) and 1 MiB pushes (bytes), from 4 client threads, each setting on a fresh pserver
 * in the same run; {@code batch-replica} is batch with {@code replicas = 2}: a second pserver
 * process is the shard's backup, and every push waits for its acknowledgement. The rounds are
 * interleaved (off, none, batch, always, then again) and the better of two kept, so that a change
 * of machine load hits every setting alike.
 *
 * <p>Beside the throughput, the CPU the pserver processes spent per push in the measured window
 * ({@code /proc}), with and without their JIT: each setting runs on fresh JVMs, and a replicated
 * pair is still compiling its hot paths seconds after its start, so the share of the JIT says how
 * much of a figure is start-up ({@code push_cpu_<size>_wal_<setting>_vs_no_wal}: without the JIT,
 * the cost of the work itself).
 */
public final class WalSuite {
  static final String[] SETTINGS = {"off", "none", "batch", "always", "batch-replica"};
  static final int[] SIZES = {4 << 10, 1 << 20};
  static final int THREADS = 4;
  static final int ROUNDS = 2;

  private static final String PSERVER = "pserver";

  private final Path runDir;
  private final ServiceJars jars;
  private final boolean quick;

  public WalSuite(Path runDir, ServiceJars jars, boolean quick) {
    this.runDir = runDir;
    this.jars = jars;
    this.quick = quick;
  }

  private ClusterSpec spec(String setting, int round) {
    boolean replica = setting.endsWith("-replica");
    ClusterSpec.Builder b =
        jars.spec(runDir.resolve("wal").resolve(setting + "-" + round))
            .job("bench-wal-" + setting + "-" + round)
            .count(Role.MASTER, 0)
            .pservers(replica ? 2 : 1)
            .trainers(0)
            .jvmOptions(Role.PSERVER, ServiceJars.jvmOptions(Role.PSERVER))
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .startTimeout(Duration.ofSeconds(180));
    if (setting.equals("off")) {
      b.property(Role.PSERVER, "paramserver.pserver.wal.enabled", "false");
    } else if (replica) {
      b.property(Role.PSERVER, "paramserver.pserver.wal.sync", "batch");
      b.property(Role.PSERVER, "paramserver.pserver.replicas", "2");
    } else {
      b.property(Role.PSERVER, "paramserver.pserver.wal.sync", setting);
    }
    return b.build();
  }

  public void run(Report report) throws Exception {
    inJvm(report);
    // pushes per second, best round, by setting and size; the pservers' CPU-us per push, least
    Map<String, double[]> best = new LinkedHashMap<>();
    Map<String, double[]> cpu = new LinkedHashMap<>();
    for (String s : SETTINGS) {
      best.put(s, new double[SIZES.length]);
      double[] c = new double[SIZES.length];
      Arrays.fill(c, Double.NaN);
      cpu.put(s, c);
    }
    // each setting runs on fresh JVMs: a fresh pserver's push costs 10 to 50 times its warm cost,
    // and 2 s in a replicated pair's JIT still takes half of its CPU (printed per round below)
    long warm = quick ? 1000 : 2000;
    long measure = quick ? 1000 : 1500;
    int rounds = quick ? 1 : ROUNDS;
    for (int round = 0; round < rounds; round++) {
      for (String setting : SETTINGS) {
        try (LocalCluster cluster = new LocalCluster(spec(setting, round));
            CpuSampler sampler = CpuSampler.start()) {
          cluster.start();
          List<String> addresses = new ArrayList<>();
          for (int p = 0; p < cluster.spec().count(Role.PSERVER); p++) {
            addresses.add("127.0.0.1:" + cluster.process(Role.PSERVER, p).grpcPort());
            sampler.watch(PSERVER, cluster.process(Role.PSERVER, p).pid(), null);
          }
          String address =
              PserverSetup.awaitRole(addresses, ReplicaRole.REPLICA_PRIMARY, Duration.ofSeconds(60))
                  .orElse(addresses.get(0));
          PserverSetup.awaitServing(address, Duration.ofSeconds(60));
          OptimizerConfig sgd =
              OptimizerConfig.newBuilder()
                  .setKind(OptimizerConfig.Kind.SGD)
                  .setLearningRate(1e-6f)
                  .build();
          List<PserverSetup.Param> params = new ArrayList<>();
          for (int size : SIZES) {
            params.add(new PserverSetup.Param(name(size), size / 4, sgd));
          }
          PserverSetup.initialise(address, params);
          if (addresses.size() > 1) {
            // a first push makes the primary send its backup the initialised shard
            try (PserverOps first =
                new PserverOps(
                    PserverOps.Kind.PUSH,
                    address,
                    name(SIZES[0]),
                    SIZES[0] / 4,
                    PserverSetup.BLOCK)) {
              first.run();
            }
            PserverSetup.awaitRole(
                    addresses, ReplicaRole.REPLICA_BACKUP_SYNCED, Duration.ofSeconds(60))
                .orElseThrow(() -> new IllegalStateException("the backup never held the shard"));
          }
          for (int i = 0; i < SIZES.length; i++) {
            int size = SIZES[i];
            Op.Factory f =
                () ->
                    new PserverOps(
                        PserverOps.Kind.PUSH, address, name(size), size / 4, PserverSetup.BLOCK);
            LoadRunner.Result r = LoadRunner.run(f, THREADS, size, warm, measure);
            double perSec = r.ops() / r.seconds();
            best.get(setting)[i] = Math.max(best.get(setting)[i], perSec);
            sampler.sampleNow();
            Map<String, Double> spent =
                sampler.window(r.startNanos(), r.endNanos(), r.ops()).figures();
            double us = spent.getOrDefault(PSERVER + "_cpu_us_per_sample", Double.NaN);
            double jit = spent.getOrDefault(PSERVER + "_jit_share", Double.NaN);
            double work = us * (1 - jit);
            double[] c = cpu.get(setting);
            if (!Double.isNaN(work)) {
              c[i] = Double.isNaN(c[i]) ? work : Math.min(c[i], work);
            }
            System.out.printf(
                "wal %-6s push %6s x%d: %9.0f pushes/s  p50 %8.1f us  p99 %8.1f us  pservers"
                    + " %7.1f CPU-us/push (JIT %2.0f %%) (round %d)%n",
                setting,
                KernelSuite.size(size),
                THREADS,
                perSec,
                r.p50Us(),
                r.p99Us(),
                us,
                jit * 100,
                round + 1);
          }
        }
      }
    }
    Report.Table t =
        report.table(
            "Write-ahead log (1 pserver process, loopback)",
            "Push throughput, pushes/s from "
                + THREADS
                + " threads (best of "
                + rounds
                + " interleaved rounds), the ratio to no log, and the CPU the pservers spent per"
                + " push without their JIT (least of the rounds)",
            "wal.sync",
            "4 KiB pushes/s",
            "4 KiB vs no log",
            "4 KiB CPU-us/push",
            "1 MiB pushes/s",
            "1 MiB vs no log",
            "1 MiB CPU-us/push");
    double[] off = best.get("off");
    double[] offCpu = cpu.get("off");
    for (String setting : SETTINGS) {
      double[] v = best.get(setting);
      double[] c = cpu.get(setting);
      t.row(
          setting.equals("off") ? "(log off)" : setting,
          v[0],
          v[0] / off[0],
          c[0],
          v[1],
          v[1] / off[1],
          c[1]);
      if (!setting.equals("off")) {
        for (int i = 0; i < SIZES.length; i++) {
          report.ratio(
              "push_" + KernelSuite.size(SIZES[i]) + "_wal_" + setting + "_vs_no_wal",
              v[i] / off[i],
              null,
              "pushes/s with paramserver.pserver.wal.sync="
                  + setting
                  + " against the log off, "
                  + THREADS
                  + " threads, best of "
                  + rounds
                  + " interleaved rounds");
          report.ratio(
              "push_cpu_" + KernelSuite.size(SIZES[i]) + "_wal_" + setting + "_vs_no_wal",
              c[i] / offCpu[i],
              null,
              "the pservers' CPU-us per push without their JIT (all pserver processes, /proc) with"
                  + " paramserver.pserver.wal.sync="
                  + setting
                  + " against the log off, least of "
                  + rounds
                  + " interleaved rounds");
        }
      }
    }
  }

  /** The same comparison without network or process: the log's own cost per push. */
  private void inJvm(Report report) throws Exception {
    // --quick: 2 rounds, which leaves the time of the training section's interleaved rounds
    int rounds = quick ? 2 : 3;
    Map<String, double[]> best = WalInJvmBench.run(rounds, quick ? 700 : 1000);
    Report.Table t =
        report.table(
            "Write-ahead log (1 pserver process, loopback)",
            "In one JVM, no network: pushes/s into a shard from 1 thread (best of "
                + rounds
                + " interleaved rounds), and the ratio to no log",
            "wal.sync",
            "4 KiB pushes/s",
            "4 KiB vs no log",
            "1 MiB pushes/s",
            "1 MiB vs no log");
    double[] off = best.get("off");
    for (String setting : WalInJvmBench.SETTINGS) {
      double[] v = best.get(setting);
      t.row(
          setting.equals("off") ? "(log off)" : setting, v[0], v[0] / off[0], v[1], v[1] / off[1]);
      if (!setting.equals("off")) {
        for (int i = 0; i < SIZES.length; i++) {
          report.ratio(
              "push_injvm_" + KernelSuite.size(SIZES[i]) + "_wal_" + setting + "_vs_no_wal",
              v[i] / off[i],
              null,
              "pushes/s into a shard in one JVM, 1 thread, with wal.sync=" + setting);
        }
      }
    }
  }

  private static String name(int size) {
    return "w" + KernelSuite.size(size);
  }
}
