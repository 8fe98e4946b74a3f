package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingStatus;
import dev.paramserver.proto.v1.ServingStatusRequest;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A serving replica (Spring context in this JVM) follows shard 0 of a job whose two pserver
 * processes are a primary and its backup ({@code replicas = 2}), while a client pushes and lookups
 * run without pause. The primary is killed with SIGKILL; the backup takes over; the replica finds
 * it in {@code ps/0} and follows it. Every lookup answers (from what the replica held meanwhile),
 * version numbers never go back, a shard's sequence goes back only with a new feed epoch, and after
 * the pushes the replica holds the new primary's rows bit for bit.
 */
@ExtendWith(PlainLogging.class)
@Timeout(1200)
class ServingTakeoverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final String TABLE = "emb";
  private static final int WIDTH = 4;
  private static final long[] IDS = {1, 2, 3, 5, 8, 13};

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private ServiceRun pserver(String job, String name) throws Exception {
    return ServiceRun.start(
        Role.PSERVER,
        dir.resolve("logs/" + name + ".log"),
        Map.of(
            "paramserver.job", job,
            "paramserver.etcd.endpoints", etcd.endpoint(),
            "paramserver.etcd.lease-ttl", "2s",
            "paramserver.pserver.desired", "1",
            "paramserver.pserver.replicas", "2",
            "paramserver.pserver.index", "0",
            "paramserver.pserver.checkpoint-dir", dir.resolve(name).toString(),
            "paramserver.pserver.checkpoint-interval", "1s"));
  }

  private static PushGradientsRequest push(long step) {
    float[] g = new float[IDS.length * WIDTH];
    for (int i = 0; i < g.length; i++) {
      g[i] = 0.001f * ((i + step) % 7);
    }
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(TABLE)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(g));
    Arrays.stream(IDS).forEach(rows::addRowIds);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t0")
        .setSession("s1")
        .setStep(step)
        .addSparseGradients(rows)
        .build();
  }

  private static String primary(EtcdCoordinator c) {
    return c.kv().get(c.keys().ps(0)).map(kv -> kv.valueAsString()).orElse("");
  }

  @Test
  void primaryKilled_replicaFollowsTheNewPrimary_answersThroughout_versionsNeverGoBack()
      throws Exception {
    String job = etcd.uniqueJob();
    List<ServiceRun> runs = new ArrayList<>();
    ConfigurableApplicationContext serving = null;
    List<ManagedChannel> channels = new ArrayList<>();
    AtomicBoolean stop = new AtomicBoolean();
    List<Thread> threads = new ArrayList<>();
    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      runs.add(pserver(job, "a"));
      // a pserver process may take minutes to start on a loaded machine
      Poll.until(Duration.ofSeconds(300), () -> !primary(c).isEmpty(), "a primary registered");
      runs.add(pserver(job, "b"));
      Poll.until(
          Duration.ofSeconds(300),
          () -> c.kv().get(c.keys().psBackup(0)).isPresent(),
          "a backup registered");
      String first = primary(c);
      ManagedChannel pch = Channels.forAddress(first);
      channels.add(pch);
      var init = ParameterServerGrpc.newBlockingStub(pch);
      ParameterSpec emb =
          ParameterSpec.newBuilder()
              .setName(TABLE)
              .addShape(0)
              .addShape(WIDTH)
              .setDtype(DataType.FLOAT32)
              .setSparse(true)
              .setInitStddev(0.1f)
              .setOptimizer(
                  OptimizerConfig.newBuilder()
                      .setKind(OptimizerConfig.Kind.SGD)
                      .setLearningRate(1f))
              .build();
      Poll.until(
          Duration.ofSeconds(60),
          () -> {
            try {
              init.withDeadlineAfter(5, TimeUnit.SECONDS)
                  .initParameters(
                      InitParametersRequest.newBuilder()
                          .setTrainerId("t0")
                          .setInitId("i1")
                          .addParameters(emb)
                          .build());
              return true;
            } catch (StatusRuntimeException e) {
              return false;
            }
          },
          "InitParameters accepted");
      init.withDeadlineAfter(30, TimeUnit.SECONDS)
          .finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i1").build());

      int grpcPort = FreePorts.next();
      serving =
          ServingContexts.start(
              grpcPort,
              "--paramserver.etcd.endpoints=" + etcd.endpoint(),
              "--paramserver.job=" + job,
              "--paramserver.serving.follow-backoff-max=500ms");
      ManagedChannel sch = Channels.forAddress("127.0.0.1:" + grpcPort);
      channels.add(sch);
      var sv = ServingGrpc.newBlockingStub(sch);

      // the client: each step pushed until acknowledged, at whichever pserver is primary
      AtomicLong acked = new AtomicLong();
      AtomicLong ackedSeq = new AtomicLong();
      AtomicReference<String> lastPushError = new AtomicReference<>("none");
      Thread pusher =
          new Thread(
              () -> {
                long step = 1;
                while (!stop.get()) {
                  String at = primary(c);
                  if (at.isEmpty()) {
                    // between the old primary's lease ending and the takeover: ask etcd again
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
                    continue;
                  }
                  ManagedChannel ch = Channels.forAddress(at);
                  try {
                    long seq =
                        ParameterServerGrpc.newBlockingStub(ch)
                            .withDeadlineAfter(5, TimeUnit.SECONDS)
                            .pushGradients(push(step))
                            .getStep();
                    ackedSeq.set(seq);
                    acked.set(step++);
                  } catch (RuntimeException e) {
                    // the primary is gone or not serving yet: the same step again
                    lastPushError.set(e.toString());
                  } finally {
                    ch.shutdownNow();
                  }
                }
              },
              "pusher");
      // lookups without pause: each answers, numbers never go back
      ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
      AtomicLong answered = new AtomicLong();
      AtomicLong failedAfterFirst = new AtomicLong();
      Thread reader =
          new Thread(
              () -> {
                long number = 0;
                long epoch = 0;
                long seq = 0;
                while (!stop.get()) {
                  try {
                    LookupResponse r = sv.withDeadlineAfter(5, TimeUnit.SECONDS).lookup(lookup());
                    long n = r.getVersion().getNumber();
                    ShardPosition p = r.getVersion().getShards(0);
                    if (n < number) {
                      violations.add("version " + n + " after " + number);
                    }
                    if (p.getEpoch() == epoch && p.getSequence() < seq) {
                      violations.add("sequence " + p.getSequence() + " after " + seq);
                    }
                    number = n;
                    epoch = p.getEpoch();
                    seq = p.getSequence();
                    answered.incrementAndGet();
                  } catch (StatusRuntimeException e) {
                    if (number > 0) {
                      failedAfterFirst.incrementAndGet();
                      violations.add("lookup failed: " + e.getStatus());
                    }
                  }
                  // paced (about 200 lookups a second), not waiting for anything
                  LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
                }
              },
              "reader");
      threads.add(pusher);
      threads.add(reader);
      pusher.start();
      reader.start();
      Poll.until(Duration.ofSeconds(60), () -> acked.get() >= 30, "30 pushes acknowledged");
      Poll.until(Duration.ofSeconds(60), () -> answered.get() >= 10, "lookups answered");

      ServiceRun killed =
          runs.stream().filter(r -> first.endsWith(":" + r.grpcPort)).findFirst().orElseThrow();
      killed.process.destroyForcibly();
      assertThat(killed.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
      long atKill = acked.get();
      // the address is kept from the read that saw the takeover: read again, the key may be
      // between two registrations
      AtomicReference<String> taken = new AtomicReference<>("");
      Poll.until(
          Duration.ofSeconds(60),
          () -> {
            String now = primary(c);
            taken.set(now);
            return !now.isEmpty() && !now.equals(first);
          },
          "the backup took over");
      String second = taken.get();
      try {
        Poll.until(
            Duration.ofSeconds(90),
            () -> acked.get() >= atKill + 30,
            "30 pushes on the new primary");
      } catch (AssertionError e) {
        throw new AssertionError(e.getMessage() + " (last push error: " + lastPushError + ")", e);
      }
      stop.set(true);
      for (Thread t : threads) {
        t.join(30_000);
      }
      assertThat(violations).isEmpty();

      ManagedChannel nch = Channels.forAddress(second);
      channels.add(nch);
      LookupResponse last =
          sv.withDeadlineAfter(40, TimeUnit.SECONDS)
              .lookup(
                  lookup().toBuilder()
                      .setMinVersion(
                          MinVersion.newBuilder()
                              .setWaitMs(30_000)
                              .addShards(
                                  ShardPosition.newBuilder()
                                      .setIndex(0)
                                      .setSequence(ackedSeq.get())))
                      .build());
      SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(TABLE);
      Arrays.stream(IDS).forEach(ref::addRowIds);
      var held =
          ParameterServerGrpc.newBlockingStub(nch)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .pullParameters(PullParametersRequest.newBuilder().addSparseRows(ref).build());
      assertThat(last.getVersion().getShards(0).getSequence()).isEqualTo(held.getStep());
      assertThat(last.getValues()).isEqualTo(held.getSparseRows(0).getData());
      ServingStatus status = sv.getServingStatus(ServingStatusRequest.getDefaultInstance());
      assertThat(status.getShards(0).getPrimary()).isEqualTo(second);
      assertThat(failedAfterFirst.get()).isZero();
    } finally {
      stop.set(true);
      for (Thread t : threads) {
        t.join(30_000);
      }
      channels.forEach(ManagedChannel::shutdownNow);
      if (serving != null) {
        serving.close();
      }
      runs.forEach(ServiceRun::close);
    }
  }

  private static LookupRequest lookup() {
    return LookupRequest.newBuilder()
        .setTable(TABLE)
        .setWidth(WIDTH)
        .addAllIds(Arrays.stream(IDS).boxed().toList())
        .build();
  }
}
