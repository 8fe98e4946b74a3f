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
 * The fault suite: training jobs on real processes, each with a few faults injected one at a time.
 * Faults that need the same cluster (two masters; single-copy shards; replicated shards; faults
 * that lose pushes by design; synchronous mode) share one job, one fault after the recovery from
 * the one before, so the suite pays a cluster start per kind of cluster, not per fault. Each job
 * asserts that it finishes, that the final accuracy is within one point of a fault-free run (the
 * same model, data, batch size and passes trained in one JVM), that the master's accounting shows
 * every task of every pass done (duplicates allowed), and its push accounting; each fault's time to
 * recover is reported: from the fault until tasks are being finished again.
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

  /**
   * The passes of a job with {@code faults} faults: three for one fault, and two more for each
   * fault of a longer job, since the trainers go on training through many of the faults (a pass
   * takes about 3 s) and the job must not end before its last fault.
   */
  private static int passesFor(int faults) {
    return faults <= 1 ? PASSES : PASSES + 2 * faults;
  }

  private static ClusterSpec.Builder builder(String name, int masters, int faults)
      throws IOException {
    ClusterSpec.Builder b = Jobs.spec(dir.resolve(name));
    for (Role r : new Role[] {Role.MASTER, Role.PSERVER, Role.TRAINER}) {
      // short leases: a dead process is noticed within seconds
      b.property(r, "paramserver.etcd.lease-ttl", "4s");
    }
    return b.job(name)
        .masters(masters)
        .pservers(2)
        .trainers(2)
        .property(Role.MASTER, "paramserver.master.passes", Integer.toString(passesFor(faults)))
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

  /** What the push accounting at the end of a job checks. */
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

  /** A step applied to a running cluster; a fault returns when it is over (the process resumed). */
  interface Fault {
    void inject(LocalCluster cluster) throws Exception;
  }

  /** A named fault of a job. */
  record Scenario(String name, Fault fault) {}

  private static Scenario scenario(String name, Fault fault) {
    return new Scenario(name, fault);
  }

  /**
   * Runs one job and injects {@code faults} one at a time, in order: the first once some tasks of
   * the first pass are done, each next one once the job recovered from the one before and finished
   * {@value #TASKS_BETWEEN_FAULTS} more tasks. {@code beforeStart} runs once the cluster's ports
   * are chosen, before any process starts (to point proxies at them); {@code afterEach} after each
   * fault's recovery (checks of the job's own, such as a synced backup again). At the end the job
   * must have finished with every task of every pass done, the accuracy of a fault-free run and the
   * push accounting of {@code pushes}; each fault's time to recover is reported.
   */
  private static void runFaults(
      String job,
      ClusterSpec spec,
      Fault beforeStart,
      Pushes pushes,
      Fault afterEach,
      Scenario... faults)
      throws Exception {
    int passes = passesFor(faults.length);
    List<Double> recoveries = new ArrayList<>();
    try (LocalCluster cluster = new LocalCluster(spec)) {
      try {
        beforeStart.inject(cluster);
        cluster.start();
        long doneBefore = 0;
        for (Scenario s : faults) {
          long from = doneBefore;
          JobStatusView now =
              cluster.awaitJob(
                  v ->
                      v.isFinished() || v.isFailed() || totalDone(v) >= from + TASKS_BETWEEN_FAULTS,
                  Duration.ofMinutes(3));
          assertThat(now.isFinished() || now.isFailed())
              .as(
                  "%s: the job ended (%s) before fault %s; give it more passes",
                  job, now.state(), s)
              .isFalse();
          long done = totalDone(now);
          long t0 = System.nanoTime();
          s.fault().inject(cluster);
          // recovered when tasks are being finished again after the fault
          JobStatusView after =
              cluster.awaitJob(
                  v -> v.isFinished() || v.isFailed() || totalDone(v) > done + 1,
                  Duration.ofMinutes(3));
          recoveries.add((System.nanoTime() - t0) / 1e9);
          afterEach.inject(cluster);
          doneBefore = totalDone(after);
        }
        JobStatusView end =
            cluster.awaitJob(
                v ->
                    v.isFailed()
                        || v.isFinished()
                            && v.passes().size() == passes
                            && v.passes().get(passes - 1).evalReports() >= 1,
                Duration.ofMinutes(4));
        assertThat(end.state())
            .as("%s: job state (%s)", job, end.failureReason())
            .isEqualTo("FINISHED");
        Jobs.assertEveryTaskDoneInEveryPass(end, passes);
        double accuracy = end.passes().get(passes - 1).evalAccuracy();
        long duplicates = 0;
        for (var p : end.json().path("passes")) {
          duplicates += Jobs.number(p, "duplicates");
        }
        PushCounts counts = PushCounts.await(cluster, pushes == Pushes.COUNTED);
        for (int i = 0; i < faults.length; i++) {
          report(job, faults[i].name(), recoveries.get(i), accuracy, duplicates, counts);
        }
        assertThat(accuracy)
            .as("%s: final accuracy vs fault-free %.4f", job, faultFreeAccuracy)
            .isGreaterThanOrEqualTo(faultFreeAccuracy - 0.01);
        assertThat(counts.dropped()).as("%s: dropped pushes (%s)", job, counts).isZero();
        if (pushes == Pushes.COUNTED) {
          assertThat(counts.applied())
              .as(
                  "%s: each pserver's updates vs the pushes its trainers had acknowledged (more:"
                      + " a push applied twice; fewer: an acknowledged push lost) (%s)",
                  job, counts)
              .isEqualTo(counts.acknowledged());
        }
        if (pushes == Pushes.SYNC_STEPS) {
          assertThat(Set.copyOf(counts.applied().values()))
              .as("%s: steps applied by each shard, all equal (%s)", job, counts)
              .hasSize(1);
          assertThat(Set.copyOf(counts.acknowledged().values()))
              .as("%s: pushes acknowledged by each shard, all equal (%s)", job, counts)
              .hasSize(1);
          assertThat(counts.applied().keySet()).hasSize(counts.acknowledged().size());
        }
        Jobs.stopTrainers(cluster);
      } catch (Throwable t) {
        // what the next CI failure needs: every pserver's part and the processes' last lines
        System.out.printf(
            Locale.ROOT,
            "FAULT %s FAILED: %s; logs in %s%n%s%s",
            job,
            ShardRoles.describe(cluster, 1),
            spec.runDir(),
            ProcessLogs.tails(cluster, Role.PSERVER, 80),
            ProcessLogs.tails(cluster, Role.MASTER, 40));
        throw t;
      }
    }
  }

  /** Tasks (of 40 a pass) finished between one fault's recovery and the next fault. */
  private static final int TASKS_BETWEEN_FAULTS = 10;

  private static long totalDone(JobStatusView s) {
    long done = 0;
    for (JobStatusView.PassView p : s.passes()) {
      done += p.tasks().done();
    }
    return Math.max(done, s.tasks().done());
  }

  private static void report(
      String job,
      String scenario,
      double recovery,
      double accuracy,
      long duplicates,
      PushCounts pushes)
      throws IOException {
    String line =
        String.format(
            Locale.ROOT,
            "| %s | %s | %.1f s | %.4f | %.4f | %d | %d | %s |%n",
            scenario,
            job,
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
          "| scenario | job | time to recover | final accuracy | fault-free accuracy | duplicate"
              + " tasks (job) | dropped pushes (job) | doubled or lost pushes (job's pushes) |\n"
              + "| --- | --- | --- | --- | --- | --- | --- | --- |\n");
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

  // --- the faults ---

  private static Scenario killLeaderMaster() {
    return scenario("kill-leader-master", c -> c.kill(Role.MASTER, leader(c).index()));
  }

  private static Scenario leaderCutOffFromEtcd(List<FaultProxy> masterEtcd) {
    return scenario(
        "leader-etcd-partition",
        c -> {
          FaultProxy proxy = masterEtcd.get(leader(c).index());
          proxy.blackHole();
          Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
          proxy.heal();
        });
  }

  private static Scenario killPserver() {
    return scenario("kill-pserver", c -> c.kill(Role.PSERVER, 1));
  }

  private static Scenario pserverPaused() {
    return scenario(
        "pserver-paused-10s",
        c -> {
          c.pauseProcess(Role.PSERVER, 0);
          Thread.sleep(10_000); // the fault itself lasts 10 s
          c.resume(Role.PSERVER, 0);
        });
  }

  private static Scenario etcdDown() {
    return scenario(
        "etcd-down-10s",
        c -> {
          c.stopEtcd();
          Thread.sleep(10_000); // the fault itself lasts 10 s
          c.startEtcd();
        });
  }

  private static Scenario masterConnectionCut(FaultProxy proxy) {
    return scenario("master-connection-cut", c -> proxy.cut(Duration.ofSeconds(5)));
  }

  private static Scenario killTrainer() {
    return scenario("kill-trainer", c -> c.kill(Role.TRAINER, 0));
  }

  private static Scenario killPserverAndLoseItsCheckpoints() {
    return scenario(
        "kill-pserver-no-checkpoint",
        c -> {
          c.kill(Role.PSERVER, 1, false);
          deleteTree(c.spec().runDir().resolve("checkpoints").resolve("pserver-1"));
          c.restart(Role.PSERVER, 1);
        });
  }

  /** The pserver process that is the primary of shard 1, once the shard has a synced backup. */
  private static int primaryOfShard1(LocalCluster c) throws InterruptedException {
    return ShardRoles.awaitReplicated(c, 1, Duration.ofSeconds(60));
  }

  private static Scenario killPrimaryAndLoseItsDisk(String name) {
    // the primary of shard 1 is killed and its directory deleted: its backup takes over with
    // every acknowledged push, the trainers find it through etcd, and the killed pserver comes
    // back as the new backup
    return scenario(
        name,
        c -> {
          int primary = primaryOfShard1(c);
          c.kill(Role.PSERVER, primary, false);
          deleteTree(c.spec().runDir().resolve("checkpoints").resolve("pserver-" + primary));
          c.restart(Role.PSERVER, primary);
        });
  }

  private static Scenario primaryCutOffFromEtcd(List<FaultProxy> pserverEtcd) {
    // the primary of shard 1 is partitioned from etcd (its lease ends there) while the trainers
    // and its backup still reach it: the backup takes the shard over, the cut-off primary must
    // not acknowledge a push the new primary does not hold
    return scenario(
        "primary-etcd-partition",
        c -> {
          FaultProxy proxy = pserverEtcd.get(primaryOfShard1(c));
          proxy.blackHole();
          Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
          proxy.heal();
        });
  }

  private static Scenario primaryPausedPastItsLease() {
    // SIGSTOP of the primary of shard 1 while the trainers push to it: its lease ends, the
    // backup takes over; the pushes that were on their way to the paused primary are read by it
    // when it resumes, still believing it is the primary: none of them may be acknowledged
    // unless the new primary holds it
    return scenario(
        "primary-paused-past-lease",
        c -> {
          int primary = primaryOfShard1(c);
          c.pauseProcess(Role.PSERVER, primary);
          Thread.sleep(PARTITION.toMillis()); // the fault itself lasts 10 s
          c.resume(Role.PSERVER, primary);
        });
  }

  private static Scenario primaryAndBackupCutOff(List<FaultProxy> advertised) {
    // the backup of shard 1 is partitioned from its primary (its advertised port black-holed),
    // both keep their etcd leases
    return scenario(
        "primary-backup-partition",
        c -> {
          primaryOfShard1(c);
          FaultProxy proxy = advertised.get(ShardRoles.syncedBackupOf(c, 1).orElseThrow());
          proxy.blackHole();
          Thread.sleep(PARTITION.toMillis() + 5_000); // past the replication timeout (10 s)
          proxy.heal();
        });
  }

  private static void deleteTree(Path root) throws IOException {
    if (Files.exists(root)) {
      try (var files = Files.walk(root)) {
        files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  /** The length of the partitions and pauses: past the lease TTL (4 s) and its renewal. */
  private static final Duration PARTITION = Duration.ofSeconds(10);

  /** Two shards of a primary and a backup each: four pserver processes, {@code replicas=2}. */
  private static ClusterSpec.Builder replicated(String name, int faults) throws IOException {
    return builder(name, 1, faults)
        .pservers(4)
        .property(Role.PSERVER, "paramserver.pserver.replicas", "2");
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

  private static void targetEtcd(LocalCluster cluster, List<FaultProxy> proxies) {
    String endpoint = cluster.etcdEndpoint();
    int port = Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
    proxies.forEach(p -> p.target(port));
  }

  private static void closeAll(List<FaultProxy> proxies) {
    proxies.forEach(FaultProxy::close);
  }

  private static final Fault NOTHING = c -> {};

  // --- the jobs: faults grouped by the cluster they need, one job each ---

  @Test
  void masters_leaderKilled_thenLeaderCutOffFromEtcd_standbyTakesOverEachTime() throws Exception {
    // two masters, each reaching etcd through a proxy of its own
    ClusterSpec.Builder b = builder("masters", 2, 2);
    List<FaultProxy> proxies = etcdProxies(b, Role.MASTER, 2);
    try {
      runFaults(
          "masters",
          b.build(),
          c -> targetEtcd(c, proxies),
          Pushes.COUNTED,
          NOTHING,
          killLeaderMaster(),
          leaderCutOffFromEtcd(proxies));
    } finally {
      closeAll(proxies);
    }
  }

  @Test
  void singleCopyShards_masterConnectionCut_pserverKilled_pserverPaused_etcdDown()
      throws Exception {
    try (FaultProxy proxy = new FaultProxy("master")) {
      // the master publishes the proxy's port, so every trainer reaches it through the proxy
      ClusterSpec spec =
          builder("single-copy", 1, 4)
              .property(
                  Role.MASTER, "paramserver.master.advertise-port", Integer.toString(proxy.port()))
              .build();
      runFaults(
          "single-copy",
          spec,
          c -> proxy.target(c.process(Role.MASTER, 0).grpcPort()),
          Pushes.COUNTED,
          NOTHING,
          masterConnectionCut(proxy),
          killPserver(),
          pserverPaused(),
          etcdDown());
    }
  }

  @Test
  void lossyFaults_trainerKilled_pserverKilledWithItsCheckpointsLost() throws Exception {
    runFaults(
        "lossy",
        builder("lossy", 1, 2).build(),
        NOTHING,
        Pushes.DROPPED_ONLY,
        NOTHING,
        killTrainer(),
        killPserverAndLoseItsCheckpoints());
  }

  @Test
  void
      replicas_primaryCutOffFromEtcd_primaryPausedPastItsLease_primaryAndBackupCutOff_primaryKilled()
          throws Exception {
    // every pserver reaches etcd through a proxy of its own and advertises the port of another
    // (the primary dials its backup there, the trainers their primaries)
    ClusterSpec.Builder b = replicated("replicas", 4);
    List<FaultProxy> etcd = etcdProxies(b, Role.PSERVER, 4);
    List<FaultProxy> advertised = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      FaultProxy proxy = new FaultProxy("pserver-" + i);
      advertised.add(proxy);
      b.property(
          Role.PSERVER, i, "paramserver.pserver.advertise-port", Integer.toString(proxy.port()));
    }
    try {
      runFaults(
          "replicas",
          b.build(),
          c -> {
            targetEtcd(c, etcd);
            for (int i = 0; i < 4; i++) {
              advertised.get(i).target(c.process(Role.PSERVER, i).grpcPort());
            }
          },
          Pushes.COUNTED,
          // after each fault the shard has a synced backup again
          c -> ShardRoles.awaitReplicated(c, 1, Duration.ofSeconds(60)),
          primaryCutOffFromEtcd(etcd),
          primaryPausedPastItsLease(),
          primaryAndBackupCutOff(advertised),
          killPrimaryAndLoseItsDisk("kill-primary-replicas"));
    } finally {
      closeAll(etcd);
      closeAll(advertised);
    }
  }

  @Test
  void syncModeWithReplicas_primaryKilled_backupTakesOver() throws Exception {
    runFaults(
        "sync-replicas",
        replicated("sync-replicas", 1)
            .property(Role.TRAINER, "paramserver.trainer.sync", "true")
            // both trainers from the first step, as a synchronous job is run: a trainer that
            // joins while the first steps are open is counted in one shard's step and in the next
            // step of another, and the job can stall there (seen once in CI)
            .property(Role.MASTER, "paramserver.master.min-trainers", "2")
            .build(),
        NOTHING,
        Pushes.SYNC_STEPS,
        c -> ShardRoles.awaitReplicated(c, 1, Duration.ofSeconds(60)),
        scenario("sync-kill-primary-replicas", c -> c.kill(Role.PSERVER, primaryOfShard1(c))));
  }
}
