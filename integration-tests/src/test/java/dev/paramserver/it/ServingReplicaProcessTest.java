package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.localcluster.ClusterSpec;
import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.ProcessInfo;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * {@code run-local --serving 1} as real processes: a 1 + 1 sparse-lr job trains while a serving
 * replica answers Lookup; versions only grow; a lookup with the min_version of a push's
 * acknowledgement sees that push; the replica killed with kill -9 under lookup load is restarted by
 * the supervisor and catches up.
 */
@Timeout(600)
class ServingReplicaProcessTest {
  private static final String TABLE = "wide";
  private static final long FRESH_IDS = 5_000_000_000L;
  private static final List<Long> TRAINED_IDS = LongStream.rangeClosed(1, 100).boxed().toList();

  @TempDir Path dir;

  private final List<String> violations = new CopyOnWriteArrayList<>();
  private long step;

  @Test
  void servingReplica_followsTheTrainingJob_seesAckedPushes_andCatchesUpAfterKill9()
      throws Exception {
    ClusterSpec.Builder spec =
        ClickJobs.sparseLr(dir, 8000, 500)
            .jar(Role.SERVING, Jobs.jar(Role.SERVING))
            .job("serving")
            .masters(1)
            .pservers(1)
            .trainers(1)
            .serving(1)
            // long enough that the job trains through the whole test; the cluster is closed at
            // the end
            .property(Role.MASTER, "paramserver.master.passes", "200")
            .property(Role.PSERVER, "paramserver.pserver.checkpoint-interval", "0s")
            .property(Role.TRAINER, "paramserver.trainer.optimizer", "adagrad");
    try (LocalCluster cluster = new LocalCluster(spec.build())) {
      cluster.start();
      assertServingListedInClusterFile(cluster);
      ManagedChannel ps =
          Channels.forAddress("127.0.0.1:" + cluster.process(Role.PSERVER, 0).grpcPort());
      try {
        var pserver = ParameterServerGrpc.newBlockingStub(ps);
        cluster.awaitReady(Role.SERVING, 0, Duration.ofMinutes(3));
        ManagedChannel sv = servingChannel(cluster);
        LookupResponse first = awaitTrainedRows(ServingGrpc.newBlockingStub(sv));
        long lastSequence = first.getVersion().getShards(0).getSequence();
        for (int i = 0; i < 5; i++) {
          lastSequence = pushThenLookup(pserver, ServingGrpc.newBlockingStub(sv), lastSequence);
        }
        // the trainer's own pushes reach the replica too (they need not fall inside our 5)
        long ours = first.getVersion().getShards(0).getSequence() + 5;
        var stub = ServingGrpc.newBlockingStub(sv);
        Poll.until(
            Duration.ofSeconds(60),
            Duration.ofMillis(100),
            () ->
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .lookup(trained().build())
                        .getVersion()
                        .getShards(0)
                        .getSequence()
                    > ours,
            "records applied by the replica from the trainer's pushes besides our 5");

        AtomicBoolean loading = new AtomicBoolean(true);
        AtomicLong answered = new AtomicLong();
        Thread load = lookupLoad(cluster, loading, answered);
        load.start();
        try {
          Poll.until(Duration.ofSeconds(60), () -> answered.get() >= 20, "lookups under load");
          ProcessInfo killed = cluster.kill(Role.SERVING, 0);
          cluster.awaitReady(Role.SERVING, 0, Duration.ofMinutes(3));
          assertThat(cluster.process(Role.SERVING, 0).pid()).isNotEqualTo(killed.pid());
          assertThat(cluster.process(Role.SERVING, 0).restarts()).isEqualTo(1);
          long before = answered.get();
          Poll.until(
              Duration.ofSeconds(60), () -> answered.get() > before + 20, "lookups after restart");
        } finally {
          loading.set(false);
          load.join(TimeUnit.SECONDS.toMillis(30));
        }
        sv.shutdownNow();
        sv = servingChannel(cluster);
        // the restarted replica copied the shard again and follows on: it sees new pushes
        long after = 0;
        for (int i = 0; i < 3; i++) {
          after = pushThenLookup(pserver, ServingGrpc.newBlockingStub(sv), after);
        }
        assertThat(after).as("sequence served after the restart").isGreaterThan(lastSequence);
        sv.shutdownNow();
        assertThat(violations).as("versions going back").isEmpty();
        assertThat(cluster.jobStatus().orElseThrow().isFailed()).isFalse();
      } finally {
        ps.shutdownNow();
      }
    }
  }

  private static ManagedChannel servingChannel(LocalCluster cluster) {
    return Channels.forAddress("127.0.0.1:" + cluster.process(Role.SERVING, 0).grpcPort());
  }

  private static void assertServingListedInClusterFile(LocalCluster cluster) throws Exception {
    JsonNode processes =
        new ObjectMapper().readTree(cluster.clusterFile().toFile()).get("processes");
    JsonNode serving = null;
    for (JsonNode p : processes) {
      if (p.path("role").asString().equals("serving")) {
        serving = p;
      }
    }
    assertThat(serving).as("a serving process in %s", processes).isNotNull();
    assertThat(serving.path("grpcPort").asInt())
        .isEqualTo(cluster.process(Role.SERVING, 0).grpcPort());
    assertThat(serving.path("httpPort").asInt()).isPositive();
  }

  /** Waits until the trainer initialised the table and pushed rows the replica serves. */
  private static LookupResponse awaitTrainedRows(ServingGrpc.ServingBlockingStub stub) {
    LookupResponse[] seen = new LookupResponse[1];
    Poll.until(
        Duration.ofMinutes(3),
        Duration.ofMillis(200),
        () -> {
          try {
            seen[0] = stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(trained().build());
            return seen[0].getDefaultedCount() < TRAINED_IDS.size();
          } catch (StatusRuntimeException e) {
            return false; // the table is not there before the trainer initialised it
          }
        },
        "rows of '" + TABLE + "' trained and served");
    return seen[0];
  }

  private static LookupRequest.Builder trained() {
    return LookupRequest.newBuilder().setTable(TABLE).setWidth(1).addAllIds(TRAINED_IDS);
  }

  /**
   * Pushes a gradient for an id the trainer never uses, then looks it up with the acknowledgement's
   * min_version: the row is served, no longer the table's initial row, at a sequence not behind
   * {@code lastSequence}. Returns the sequence served.
   */
  private long pushThenLookup(
      ParameterServerGrpc.ParameterServerBlockingStub pserver,
      ServingGrpc.ServingBlockingStub serving,
      long lastSequence) {
    step++;
    long id = FRESH_IDS + step;
    long acked =
        pserver
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .pushGradients(
                PushGradientsRequest.newBuilder()
                    .setTrainerId("serving-test")
                    .setSession("serving-test-session")
                    .setStep(step)
                    .addSparseGradients(
                        SparseRows.newBuilder()
                            .setName(TABLE)
                            .setDtype(DataType.FLOAT32)
                            .setData(TensorCodec.encode(new float[] {1f}))
                            .addRowIds(id))
                    .build())
            .getStep();
    LookupResponse r =
        serving
            .withDeadlineAfter(20, TimeUnit.SECONDS)
            .lookup(
                LookupRequest.newBuilder()
                    .setTable(TABLE)
                    .setWidth(1)
                    .addIds(id)
                    .setMinVersion(
                        MinVersion.newBuilder()
                            .setWaitMs(15_000)
                            .addShards(ShardPosition.newBuilder().setIndex(0).setSequence(acked)))
                    .build());
    long served = r.getVersion().getShards(0).getSequence();
    assertThat(served)
        .as("sequence served for a push acknowledged at %d", acked)
        .isGreaterThanOrEqualTo(acked);
    assertThat(served).as("sequence served").isGreaterThanOrEqualTo(lastSequence);
    assertThat(r.getDefaultedList()).as("id %d pushed at %d is held", id, acked).isEmpty();
    assertThat(TensorCodec.decode(r.getValues())[0]).as("row %d after its push", id).isNotZero();
    return served;
  }

  /**
   * A thread looking up 100 trained ids in a loop until {@code loading} ends, counting answers and
   * recording any answer whose version number or sequence is behind the previous answer of the same
   * replica. Errors (the replica killed, restarting) are expected and skipped.
   */
  private Thread lookupLoad(LocalCluster cluster, AtomicBoolean loading, AtomicLong answered) {
    return new Thread(
        () -> {
          String replica = "";
          long number = 0;
          long sequence = 0;
          ManagedChannel channel = servingChannel(cluster);
          try {
            while (loading.get()) {
              LookupResponse r;
              try {
                r =
                    ServingGrpc.newBlockingStub(channel)
                        .withWaitForReady()
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .lookup(trained().build());
              } catch (StatusRuntimeException e) {
                continue; // waited for the replica up to the deadline: it is down or restarting
              }
              answered.incrementAndGet();
              long seq = r.getVersion().getShards(0).getSequence();
              if (r.getVersion().getReplica().equals(replica)
                  && (r.getVersion().getNumber() < number || seq < sequence)) {
                violations.add(
                    "replica "
                        + replica
                        + ": "
                        + number
                        + "/"
                        + sequence
                        + " then "
                        + r.getVersion());
              }
              replica = r.getVersion().getReplica();
              number = r.getVersion().getNumber();
              sequence = seq;
            }
          } finally {
            channel.shutdownNow();
          }
        },
        "serving-lookup-load");
  }
}
