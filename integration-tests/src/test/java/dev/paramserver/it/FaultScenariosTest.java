package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Dataset;
import dev.paramserver.models.Evaluation;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.demo.DemoData;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.testsupport.FaultProxy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fault suite: during a training job on real processes, one fault at a time. Each scenario
 * asserts that the job finishes, that the final accuracy is within one point of a fault-free run
 * (the same model, data, batch size and passes trained in one JVM), that the master's accounting
 * shows every task of every pass done (duplicates allowed), and reports the time to recover: from
 * the fault until tasks are being finished again.
 */
class FaultScenariosTest {
  private static final int PASSES = 3;
  private static final int BATCH = 32;
  private static final double LR = 0.1;

  @TempDir static Path dir;
  static DemoData.Result demo;
  static double faultFreeAccuracy;

  @BeforeAll
  static void dataAndBaseline() throws Exception {
    demo =
        DemoData.generate(
            dir.resolve("data"),
            DemoData.Options.builder()
                .train(24000)
                .test(4000)
                .shards(2)
                .recordsPerChunk(200)
                .build());
    faultFreeAccuracy = singleJvmAccuracy();
  }

  /** The same model and data trained with plain SGD in this JVM: the fault-free reference. */
  private static double singleJvmAccuracy() throws IOException {
    List<Example> train =
        Dataset.readGlobs(List.of(dir.resolve("data").resolve("train-*.recordio").toString()));
    List<Example> test = Dataset.readGlobs(List.of(demo.testFile().toString()));
    int features = Dataset.featuresOf(train);
    Model m = Mlp.softmax(features, Dataset.classesOf(test));
    Parameters p = Initializers.initial(m, 42);
    Parameters g = Parameters.zerosLike(m);
    Dataset data = new Dataset(new ArrayList<>(train), features);
    for (int pass = 0; pass < PASSES; pass++) {
      for (Batch b : data.shuffle(pass).batches(BATCH)) {
        g.clear();
        m.trainStep(p, b, g);
        for (String name : p.denseNames()) {
          float[] w = p.dense(name);
          float[] gw = g.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= (float) LR * gw[i];
          }
        }
      }
    }
    return Evaluation.of(m, p, new Dataset(new ArrayList<>(test), features), 1000).accuracy();
  }

  private static ClusterSpec spec(String name, int masters) throws IOException {
    return builder(name, masters).build();
  }

  private static ClusterSpec.Builder builder(String name, int masters) throws IOException {
    ClusterSpec.Builder b = Jobs.spec(dir.resolve(name));
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      // short leases: a dead process is noticed within seconds
      b.property(r, "paramserver.etcd.lease-ttl", "4s");
    }
    return b.job(name)
        .masters(masters)
        .pservers(2)
        .trainers(2)
        .property(Role.MASTER, "paramserver.master.passes", Integer.toString(PASSES))
        .property(Role.MASTER, "paramserver.master.task-timeout", "20s")
        .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "2s")
        .property(
            Role.TRAINER,
            "paramserver.trainer.train-data",
            dir.resolve("data") + "/train-*.recordio")
        .property(Role.TRAINER, "paramserver.trainer.test-data", demo.testFile().toString())
        .property(Role.TRAINER, "paramserver.trainer.batch-size", Integer.toString(BATCH))
        .property(Role.TRAINER, "paramserver.trainer.learning-rate", Double.toString(LR))
        // trainers stay up after the job, so that their push counts can be read at its end
        .property(Role.TRAINER, "paramserver.trainer.exit-when-done", "false");
  }

  /** What the push accounting at the end of a scenario checks. */
  enum Pushes {
    /**
     * 0 dropped pushes, and each pserver's update count equals the pushes its trainers had
     * acknowledged (asynchronous mode: one update per push request).
     */
    COUNTED,
    /**
     * 0 dropped pushes only: a trainer was killed (its acknowledged pushes died with it), or a
     * pserver lost its state and was re-initialised (its count restarts with the re-initialisation
     * and the pushes since its last checkpoint are lost by design).
     */
    DROPPED_ONLY,
    /**
     * Synchronous mode: 0 dropped pushes, and every shard applied the same number of steps and
     * acknowledged the same number of pushes (each step is one aggregated update of every shard,
     * made of one push of each trainer): a step lost or applied twice on one shard shows as a
     * difference.
     */
    SYNC_STEPS
  }

  /** A fault applied to a running cluster; returns when the fault is over (the process resumed). */
  interface Fault {
    void inject(LocalCluster cluster) throws Exception;
  }

  /**
   * Runs a job, injects the fault once some tasks of the first pass are done, and checks the
   * outcome.
   */
  private static void runScenario(String name, int masters, Fault fault) throws Exception {
    runScenario(name, masters, Pushes.COUNTED, fault);
  }

  private static void runScenario(String name, int masters, Pushes pushes, Fault fault)
      throws Exception {
    runScenario(name, spec(name, masters), cluster -> {}, pushes, fault);
  }

  private static void runScenario(
      String name, ClusterSpec spec, Fault afterStart, Pushes pushes, Fault fault)
      throws Exception {
    runScenario(name, spec, cluster -> {}, afterStart, pushes, fault, cluster -> {});
  }

  /**
   * As above; {@code beforeStart} runs once the cluster's ports are chosen, before any process
   * starts (to point proxies at them), and {@code afterEnd} once the job finished and its pushes
   * were counted (checks of the scenario's own).
   */
  private static void runScenario(
      String name,
      ClusterSpec spec,
      Fault beforeStart,
      Fault afterStart,
      Pushes pushes,
      Fault fault,
      Fault afterEnd)
      throws Exception {
    try (LocalCluster cluster = new LocalCluster(spec)) {
      beforeStart.inject(cluster);
      cluster.start();
      afterStart.inject(cluster);
      cluster.awaitJob(s -> s.tasks().done() >= 10 || s.pass() > 0, Duration.ofMinutes(3));
      long doneBefore = totalDone(cluster);
      long t0 = System.nanoTime();
      fault.inject(cluster);
      // recovered when tasks are being finished again after the fault
      cluster.awaitJob(
          s -> s.isFinished() || s.isFailed() || totalDone(s) > doneBefore + 1,
          Duration.ofMinutes(3));
      double recoverySeconds = (System.nanoTime() - t0) / 1e9;
      JobStatusView end =
          cluster.awaitJob(
              s ->
                  s.isFailed()
                      || s.isFinished()
                          && s.passes().size() == PASSES
                          && s.passes().get(PASSES - 1).evalReports() >= 1,
              Duration.ofMinutes(4));
      assertThat(end.state())
          .as("%s: job state (%s)", name, end.failureReason())
          .isEqualTo("FINISHED");
      Jobs.assertEveryTaskDoneInEveryPass(end, PASSES);
      double accuracy = end.passes().get(PASSES - 1).evalAccuracy();
      long duplicates = 0;
      for (var p : end.json().path("passes")) {
        duplicates += Jobs.number(p, "duplicates");
      }
      PushCounts counts = PushCounts.await(cluster, pushes == Pushes.COUNTED);
      afterEnd.inject(cluster);
      report(name, recoverySeconds, accuracy, duplicates, counts);
      assertThat(accuracy)
          .as("%s: final accuracy vs fault-free %.4f", name, faultFreeAccuracy)
          .isGreaterThanOrEqualTo(faultFreeAccuracy - 0.01);
      assertThat(counts.dropped()).as("%s: dropped pushes (%s)", name, counts).isZero();
      if (pushes == Pushes.COUNTED) {
        assertThat(counts.applied())
            .as(
                "%s: each pserver's updates vs the pushes its trainers had acknowledged (more:"
                    + " a push applied twice; fewer: an acknowledged push lost) (%s)",
                name, counts)
            .isEqualTo(counts.acknowledged());
      }
      if (pushes == Pushes.SYNC_STEPS) {
        assertThat(Set.copyOf(counts.applied().values()))
            .as("%s: steps applied by each shard, all equal (%s)", name, counts)
            .hasSize(1);
        assertThat(Set.copyOf(counts.acknowledged().values()))
            .as("%s: pushes acknowledged by each shard, all equal (%s)", name, counts)
            .hasSize(1);
        assertThat(counts.applied().keySet()).hasSize(counts.acknowledged().size());
      }
    }
  }

  private static long totalDone(LocalCluster cluster) {
    return cluster.jobStatus().map(FaultScenariosTest::totalDone).orElse(0L);
  }

  private static long totalDone(JobStatusView s) {
    long done = 0;
    for (JobStatusView.PassView p : s.passes()) {
      done += p.tasks().done();
    }
    return Math.max(done, s.tasks().done());
  }

  private static void report(
      String name, double recovery, double accuracy, long duplicates, PushCounts pushes)
      throws IOException {
    String line =
        String.format(
            Locale.ROOT,
            "| %s | %.1f s | %.4f | %.4f | %d | %d | %s |%n",
            name,
            recovery,
            accuracy,
            faultFreeAccuracy,
            duplicates,
            pushes.dropped(),
            pushes.acknowledged().equals(pushes.applied())
                ? "0 (" + pushes.acknowledged().values().stream().mapToLong(n -> n).sum() + ")"
                : pushes.applied() + " vs " + pushes.acknowledged());
    System.out.print("FAULT " + line);
    Path out = Path.of("target", "fault-report.md");
    Files.createDirectories(out.getParent());
    if (!Files.exists(out)) {
      Files.writeString(
          out,
          "| scenario | time to recover | final accuracy | fault-free accuracy | duplicate tasks"
              + " | dropped pushes | doubled or lost pushes (pushes) |\n"
              + "| --- | --- | --- | --- | --- | --- | --- |\n");
    }
    Files.writeString(out, line, StandardOpenOption.APPEND);
  }

  private static ProcessInfo leader(LocalCluster cluster) {
    String identity = cluster.masterStatus().path("identity").asText();
    int port = Integer.parseInt(identity.substring(identity.lastIndexOf(':') + 1));
    return cluster.processes().stream()
        .filter(p -> p.role() == Role.MASTER && p.grpcPort() == port)
        .findFirst()
        .orElseThrow(() -> new AssertionError("no master process has gRPC port " + port));
  }

  @Test
  void killLeaderMaster_standbyTakesOver() throws Exception {
    runScenario(
        "kill-leader-master",
        2,
        cluster -> {
          ProcessInfo leader = leader(cluster);
          cluster.kill(Role.MASTER, leader.index());
        });
  }

  @Test
  void killPserver_restartedFromItsCheckpoint() throws Exception {
    runScenario("kill-pserver", 1, cluster -> cluster.kill(Role.PSERVER, 1));
  }

  @Test
  void killPrimaryWithReplicaAndLoseItsDisk_backupTakesOver() throws Exception {
    // two shards of a primary and a backup each; the primary of shard 1 is killed and its
    // directory deleted: its backup takes over with every acknowledged push, the trainers find it
    // through etcd, and the killed pserver comes back as the new backup
    ClusterSpec spec =
        builder("kill-primary-replicas", 1)
            .pservers(4)
            .property(Role.PSERVER, "paramserver.pserver.replicas", "2")
            .build();
    runScenario(
        "kill-primary-replicas",
        spec,
        cluster -> {},
        Pushes.COUNTED,
        cluster -> {
          int primary = -1;
          for (ProcessInfo p : cluster.processes()) {
            if (p.role() == Role.PSERVER
                && cluster.adminStatus(Role.PSERVER, p.index()).path("index").asInt() == 1) {
              primary = p.index();
            }
          }
          assertThat(primary)
              .as("the pserver process that is the primary of shard 1")
              .isNotNegative();
          cluster.kill(Role.PSERVER, primary, false);
          Path home = cluster.spec().runDir().resolve("checkpoints").resolve("pserver-" + primary);
          if (Files.exists(home)) {
            try (var files = Files.walk(home)) {
              files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
          }
          cluster.restart(Role.PSERVER, primary);
        });
  }

  @Test
  void killPserverAndLoseItsCheckpoints_trainersReinitialiseIt() throws Exception {
    runScenario(
        "kill-pserver-no-checkpoint",
        1,
        Pushes.DROPPED_ONLY,
        cluster -> {
          cluster.kill(Role.PSERVER, 1, false);
          Path checkpoints = cluster.spec().runDir().resolve("checkpoints").resolve("pserver-1");
          if (Files.exists(checkpoints)) {
            try (var files = Files.walk(checkpoints)) {
              files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
          }
          cluster.restart(Role.PSERVER, 1);
        });
  }

  @Test
  void trainersConnectionToTheMasterCutMidTask_theyReconnectAndGoOn() throws Exception {
    try (FaultProxy proxy = new FaultProxy("master")) {
      // the master publishes the proxy's port, so every trainer reaches it through the proxy
      ClusterSpec spec =
          builder("master-connection-cut", 1)
              .property(
                  Role.MASTER, "paramserver.master.advertise-port", Integer.toString(proxy.port()))
              .build();
      runScenario(
          "master-connection-cut",
          spec,
          cluster -> proxy.target(cluster.process(Role.MASTER, 0).grpcPort()),
          Pushes.COUNTED,
          cluster -> proxy.cut(Duration.ofSeconds(5)));
    }
  }

  @Test
  void killTrainer_aFreshOneJoins() throws Exception {
    runScenario("kill-trainer", 1, Pushes.DROPPED_ONLY, cluster -> cluster.kill(Role.TRAINER, 0));
  }

  @Test
  void etcdStoppedForTenSeconds_thenRestarted() throws Exception {
    runScenario(
        "etcd-down-10s",
        1,
        cluster -> {
          cluster.stopEtcd();
          Thread.sleep(10_000); // the fault itself lasts 10 s
          cluster.startEtcd();
        });
  }

  @Test
  void pserverPausedForTenSeconds_thenResumed() throws Exception {
    runScenario(
        "pserver-paused-10s",
        1,
        cluster -> {
          cluster.pauseProcess(Role.PSERVER, 0);
          Thread.sleep(10_000); // the fault itself lasts 10 s
          cluster.resume(Role.PSERVER, 0);
        });
  }

  /** The length of the partitions and pauses below: past the lease TTL (4 s) and its renewal. */
  private static final Duration PARTITION = Duration.ofSeconds(10);

  /** Two shards of a primary and a backup each: four pserver processes, {@code replicas=2}. */
  private static ClusterSpec.Builder replicated(String name) throws IOException {
    return builder(name, 1).pservers(4).property(Role.PSERVER, "paramserver.pserver.replicas", "2");
  }

  /** One proxy per process of {@code role}, each the process's own way to etcd. */
  private static List<FaultProxy> etcdProxies(ClusterSpec.Builder b, Role role, int count)
      throws IOException {
    List<FaultProxy> proxies = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      FaultProxy proxy = new FaultProxy(role.id() + "-" + i + "-etcd");
      proxies.add(proxy);
      b.property(role, i, "paramserver.etcd.endpoints", proxy.endpoint());
    }
    return proxies;
  }

  private static Fault targetEtcd(List<FaultProxy> proxies) {
    return cluster -> {
      String endpoint = cluster.etcdEndpoint();
      int port = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
      proxies.forEach(p -> p.target(port));
    };
  }

  private static void closeAll(List<FaultProxy> proxies) {
    proxies.forEach(FaultProxy::close);
  }

  @Test
  void primaryCutOffFromEtcd_trainersStillReachIt_backupTakesOver() throws Exception {
    // each pserver reaches etcd through a proxy of its own; the primary of shard 1 is
    // partitioned from etcd (its lease ends there) while the trainers and its backup still reach
    // it: the backup takes the shard over, the cut-off primary must not acknowledge a push the
    // new primary does not hold
    ClusterSpec.Builder b = replicated("primary-etcd-partition");
    List<FaultProxy> proxies = etcdProxies(b, Role.PSERVER, 4);
    try {
      runScenario(
          "primary-etcd-partition",
          b.build(),
          targetEtcd(proxies),
          cluster -> {},
          Pushes.COUNTED,
          cluster -> {
            int primary = ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60));
            proxies.get(primary).blackHole();
            Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
            proxies.get(primary).heal();
          },
          cluster -> ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60)));
    } finally {
      closeAll(proxies);
    }
  }

  @Test
  void primaryPausedPastItsLease_pushesInFlight_thenResumed() throws Exception {
    // SIGSTOP of the primary of shard 1 while the trainers push to it: its lease ends, the
    // backup takes over; the pushes that were on their way to the paused primary are read by it
    // when it resumes, still believing it is the primary: none of them may be acknowledged
    // unless the new primary holds it
    runScenario(
        "primary-paused-past-lease",
        replicated("primary-paused-past-lease").build(),
        cluster -> {},
        cluster -> {},
        Pushes.COUNTED,
        cluster -> {
          int primary = ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60));
          cluster.pauseProcess(Role.PSERVER, primary);
          Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
          cluster.resume(Role.PSERVER, primary);
        },
        cluster -> ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60)));
  }

  @Test
  void primaryAndBackupCutOffFromEachOther_pushesGoOnUnreplicated_backupRefilledAfter()
      throws Exception {
    // every pserver advertises the port of a proxy of its own (the primary dials its backup
    // there, the trainers their primaries); the backup of shard 1 is partitioned from its
    // primary, both keep their etcd leases
    ClusterSpec.Builder b = replicated("primary-backup-partition");
    List<FaultProxy> proxies = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      FaultProxy proxy = new FaultProxy("pserver-" + i);
      proxies.add(proxy);
      b.property(
          Role.PSERVER, i, "paramserver.pserver.advertise-port", Integer.toString(proxy.port()));
    }
    try {
      runScenario(
          "primary-backup-partition",
          b.build(),
          cluster -> {
            for (int i = 0; i < 4; i++) {
              proxies.get(i).target(cluster.process(Role.PSERVER, i).grpcPort());
            }
          },
          cluster -> {},
          Pushes.COUNTED,
          cluster -> {
            ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60));
            int backup = ShardRoles.syncedBackupOf(cluster, 1).orElseThrow();
            proxies.get(backup).blackHole();
            Thread.sleep(PARTITION.toMillis() + 5_000); // past the replication timeout (10 s)
            proxies.get(backup).heal();
          },
          // once the partition is over the shard has a synced backup again
          cluster -> ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60)));
    } finally {
      closeAll(proxies);
    }
  }

  @Test
  void leaderMasterCutOffFromEtcd_trainersStillReachIt_standbyTakesOver() throws Exception {
    ClusterSpec.Builder b = builder("leader-etcd-partition", 2);
    List<FaultProxy> proxies = etcdProxies(b, Role.MASTER, 2);
    try {
      runScenario(
          "leader-etcd-partition",
          b.build(),
          targetEtcd(proxies),
          cluster -> {},
          Pushes.COUNTED,
          cluster -> {
            ProcessInfo leader = leader(cluster);
            proxies.get(leader.index()).blackHole();
            Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
            proxies.get(leader.index()).heal();
          },
          cluster -> {});
    } finally {
      closeAll(proxies);
    }
  }

  @Test
  void syncModeWithReplicas_primaryKilled_backupTakesOver() throws Exception {
    runScenario(
        "sync-kill-primary-replicas",
        replicated("sync-kill-primary-replicas")
            .property(Role.TRAINER, "paramserver.trainer.sync", "true")
            .build(),
        cluster -> {},
        cluster -> {},
        Pushes.SYNC_STEPS,
        cluster -> {
          int primary = ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60));
          cluster.kill(Role.PSERVER, primary);
        },
        cluster -> ShardRoles.awaitReplicated(cluster, 1, Duration.ofSeconds(60)));
  }
}
