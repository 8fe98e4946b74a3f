package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.JobStatusView;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessState;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingVersion;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.psctl.Psctl;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;
import picocli.CommandLine;
import picocli.CommandLine.ExitCode;

/**
 * A sparse-lr job (real master, pserver and trainer processes) scaled 2 -> 3 -> 2 pservers with
 * {@code psctl scale} while a serving replica answers lookups without pause, then pserver 0 killed
 * with SIGKILL and restarted: every answer names a version, version numbers and placement epochs
 * never go back, a row once served is never answered as absent (what a replica reading a slot by
 * one placement map from a shard that holds another's would answer), no lookup fails for longer
 * than a bounded window, the replica served the grown placement, and once the trainer stopped the
 * replica's rows equal the pservers' bit for bit.
 */
@ExtendWith(PlainLogging.class)
@Timeout(600)
class ServingElasticScalingTest {
  private static final String TABLE = "wide";
  private static final List<Long> IDS = LongStream.rangeClosed(1, 100).boxed().toList();
  private static final long MAX_FAILING_MS = 15_000;
  // about 50 lookups a second: every phase is seen many times without a busy loop taking a core
  private static final long LOOKUP_EVERY_MS = 20;

  @TempDir Path dir;

  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final AtomicLong answered = new AtomicLong();
  private final AtomicLong longestFailingMs = new AtomicLong();
  private final AtomicLong mostShards = new AtomicLong();
  private final AtomicLong highestEpoch = new AtomicLong();
  // Owned by the lookup thread.
  private final Set<Integer> held = new HashSet<>();
  private long number;
  private long epoch;
  private long failingSince;

  private static String psctl(Map<String, String> env, String... args) {
    StringWriter out = new StringWriter();
    CommandLine cl = Psctl.commandLine(env);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(out, true));
    int code = cl.execute(args);
    assertThat(code).as("psctl %s: %s", String.join(" ", args), out).isEqualTo(ExitCode.OK);
    return out.toString();
  }

  @Test
  void scaledTwoThreeTwo_andAPserverRestarted_replicaAnswersThroughout_andEndsOnThePserversRows()
      throws Exception {
    ClusterSpec.Builder spec =
        ClickJobs.sparseLr(dir, 4000, 200)
            .job("elastic-serving")
            .masters(1)
            .pservers(2)
            .trainers(1)
            // trains through every phase however slow the machine; the trainer is stopped before
            // the last check
            .property(Role.MASTER, "paramserver.master.passes", "1000")
            .property(Role.MASTER, "paramserver.master.scaling.slots-per-move", "4096")
            .property(Role.MASTER, "paramserver.master.scaling.drain-time", "2s")
            .property(Role.PSERVER, "paramserver.pserver.register-timeout", "1s");
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      Phases phases = new Phases();
      cluster.start();
      // the third pserver starts with the job and waits for its index (ps_desired is 2)
      cluster.addProcess(Role.PSERVER);
      int grpcPort = FreePorts.next();
      ConfigurableApplicationContext serving =
          ServingContexts.start(
              grpcPort,
              "--paramserver.etcd.endpoints=" + cluster.etcdEndpoint(),
              "--paramserver.job=elastic-serving",
              // ShardFollow is an internal call: the job's token, as the cluster's services have
              "--paramserver.admin.token=" + cluster.adminToken(),
              "--paramserver.serving.follow-backoff-max=500ms");
      ManagedChannel sch = Channels.forAddress("127.0.0.1:" + grpcPort);
      ScheduledExecutorService load =
          Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "serving-lookup-load"));
      try {
        var stub = ServingGrpc.newBlockingStub(sch);
        phases.end("cluster and replica started");
        Poll.until(
            Duration.ofMinutes(3),
            Duration.ofMillis(200),
            () -> {
              try {
                return lookup(stub).getDefaultedCount() < IDS.size();
              } catch (StatusRuntimeException e) {
                return false; // no table before the trainer initialised it
              }
            },
            "rows of '" + TABLE + "' trained and served");
        phases.end("first rows served");
        load.scheduleAtFixedRate(() -> lookupOnce(stub), 0, LOOKUP_EVERY_MS, TimeUnit.MILLISECONDS);
        Map<String, String> env =
            Map.of(
                "PSCTL_MASTER",
                "http://127.0.0.1:" + cluster.process(Role.MASTER, 0).httpPort(),
                "PSCTL_TOKEN",
                cluster.adminToken());
        assertThat(psctl(env, "scale", "--pservers", "3", "--wait-minutes", "3"))
            .contains("done: 3 pservers");
        Poll.until(
            Duration.ofSeconds(60),
            Duration.ofMillis(200),
            () -> mostShards.get() == 3,
            "the replica serving the grown placement");
        phases.end("scaled to 3");
        assertThat(psctl(env, "scale", "--pservers", "2", "--wait-minutes", "3"))
            .contains("done: 2 pservers");
        cluster.awaitState(Role.PSERVER, 2, ProcessState.STOPPED, Duration.ofMinutes(1));
        phases.end("scaled to 2");

        cluster.kill(Role.PSERVER, 0);
        cluster.awaitReady(Role.PSERVER, 0, Duration.ofMinutes(2));
        long before = answered.get();
        Poll.until(
            Duration.ofSeconds(60), () -> answered.get() > before + 20, "lookups after restart");
        phases.end("pserver 0 killed and restarted");

        // no push comes any more: the replica reaches the pservers' rows
        Jobs.stopTrainers(cluster);
        float[][] expected = new float[1][];
        Poll.until(
            Duration.ofSeconds(60),
            Duration.ofMillis(500),
            () -> {
              expected[0] = pserverRows(cluster);
              return Arrays.equals(TensorCodec.decode(lookup(stub).getValues()), expected[0]);
            },
            "the replica's rows equal to the pservers'");
        phases.end("rows equal once the trainer stopped");
        ServingVersion last = lookup(stub).getVersion();
        assertThat(last.getShardsCount()).isEqualTo(2);
        assertThat(last.getPlacementEpoch()).isPositive();
        JobStatusView job = cluster.jobStatus().orElseThrow();
        assertThat(job.isFailed()).as("job failed: %s", job.failureReason()).isFalse();
      } finally {
        load.shutdown();
        load.awaitTermination(30, TimeUnit.SECONDS);
        sch.shutdownNow();
        serving.close();
      }
      System.out.printf(
          "%s; %d lookups answered; longest failing stretch %d ms; placement epochs up to %d%n",
          phases, answered.get(), longestFailingMs.get(), highestEpoch.get());
      assertThat(violations)
          .as("versions or placement epochs going back, held rows absent")
          .isEmpty();
      assertThat(answered.get()).isPositive();
      assertThat(longestFailingMs.get())
          .as("the longest time lookups failed")
          .isLessThanOrEqualTo(MAX_FAILING_MS);
    }
  }

  private static LookupResponse lookup(ServingGrpc.ServingBlockingStub stub) {
    return stub.withDeadlineAfter(10, TimeUnit.SECONDS)
        .lookup(LookupRequest.newBuilder().setTable(TABLE).setWidth(1).addAllIds(IDS).build());
  }

  /** Each id's row from the pserver that owns it (the other refuses it). */
  private static float[] pserverRows(LocalCluster cluster) {
    float[] out = new float[IDS.size()];
    ManagedChannel[] ps = new ManagedChannel[2];
    try {
      for (int p = 0; p < 2; p++) {
        ps[p] = Channels.forAddress("127.0.0.1:" + cluster.process(Role.PSERVER, p).grpcPort());
      }
      for (int i = 0; i < IDS.size(); i++) {
        boolean found = false;
        for (int p = 0; p < 2 && !found; p++) {
          try {
            var rows =
                ParameterServerGrpc.newBlockingStub(ps[p])
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .pullParameters(
                        PullParametersRequest.newBuilder()
                            .addSparseRows(
                                SparseRowsRef.newBuilder().setName(TABLE).addRowIds(IDS.get(i)))
                            .build());
            out[i] = TensorCodec.decode(rows.getSparseRows(0).getData())[0];
            found = true;
          } catch (StatusRuntimeException e) {
            // not its owner
          }
        }
        assertThat(found).as("a pserver owning id %d", IDS.get(i)).isTrue();
      }
      return out;
    } finally {
      for (ManagedChannel c : ps) {
        if (c != null) {
          c.shutdownNow();
        }
      }
    }
  }

  /**
   * One lookup of the load: counts the answer, records any version whose number or placement epoch
   * is behind the previous answer's, any id answered absent after a row was served for it, and the
   * longest stretch of failed lookups.
   */
  private void lookupOnce(ServingGrpc.ServingBlockingStub stub) {
    LookupResponse r;
    try {
      r = lookup(stub);
    } catch (StatusRuntimeException e) {
      if (failingSince == 0) {
        failingSince = System.nanoTime();
      }
      return;
    }
    if (failingSince != 0) {
      long ms = (System.nanoTime() - failingSince) / 1_000_000;
      longestFailingMs.accumulateAndGet(ms, Math::max);
      failingSince = 0;
    }
    answered.incrementAndGet();
    ServingVersion v = r.getVersion();
    if (v.getNumber() == 0 || v.getShardsCount() == 0) {
      violations.add("an answer naming no version: " + v);
    }
    if (v.getNumber() < number || v.getPlacementEpoch() < epoch) {
      violations.add(number + "@" + epoch + " then " + v);
    }
    for (int absent : r.getDefaultedList()) {
      if (held.contains(absent)) {
        violations.add("id " + IDS.get(absent) + " served before, absent at " + v);
      }
    }
    Set<Integer> absent = new HashSet<>(r.getDefaultedList());
    for (int i = 0; i < IDS.size(); i++) {
      if (!absent.contains(i)) {
        held.add(i);
      }
    }
    number = v.getNumber();
    epoch = v.getPlacementEpoch();
    mostShards.accumulateAndGet(v.getShardsCount(), Math::max);
    highestEpoch.accumulateAndGet(epoch, Math::max);
  }

  /** How long each phase of the test took, for its output. */
  private static final class Phases {
    private final StringBuilder done = new StringBuilder("phases:");
    private long since = System.nanoTime();

    void end(String phase) {
      long now = System.nanoTime();
      done.append(String.format(" %s %.1f s;", phase, (now - since) / 1e9));
      since = now;
    }

    @Override
    public String toString() {
      return done.toString();
    }
  }
}
