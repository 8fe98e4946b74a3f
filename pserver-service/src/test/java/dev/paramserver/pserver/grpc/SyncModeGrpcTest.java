package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.common.util.concurrent.ListenableFuture;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.SyncAggregator;
import dev.paramserver.pserver.sync.EtcdTrainerMembership;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The synchronous mode over gRPC: waiting calls run on the blocking executor (the in-process server
 * uses a direct executor, so a wait on a gRPC thread would deadlock the second push).
 */
class SyncModeGrpcTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private final List<Lease> leases = new ArrayList<>();
  private EtcdCoordinator coordinator;
  private EtcdTrainerMembership membership;
  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();

  private ParameterServerGrpc.ParameterServerFutureStub start(Duration syncTimeout)
      throws Exception {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    membership = new EtcdTrainerMembership(coordinator, Duration.ofSeconds(1));
    for (String t : List.of("t1", "t2")) {
      Lease lease = coordinator.grantLease(Duration.ofSeconds(5));
      leases.add(lease);
      coordinator
          .kv()
          .put(coordinator.keys().trainer(t), "x".getBytes(StandardCharsets.UTF_8), lease);
    }
    Poll.until(Duration.ofSeconds(10), () -> membership.live().size() == 2, "two live trainers");
    ParameterShard shard = new ParameterShard(true);
    shard.attachSync(new SyncAggregator(shard, membership, syncTimeout));
    ExecutorService blocking = Executors.newCachedThreadPool();
    grpc.afterServers(blocking::shutdownNow);
    ManagedChannel channel = grpc.startDirect(TestServices.parameterServer(shard, blocking));
    var stub = ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    stub.initParameters(
        init("s", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 10, 20))).toBuilder()
            .setMode(TrainingMode.SYNC)
            .build());
    stub.finishInit(finish("s", 1));
    return ParameterServerGrpc.newFutureStub(channel);
  }

  @AfterEach
  void stop() throws Exception {
    grpc.close();
    leases.forEach(Lease::revoke);
    if (membership != null) {
      membership.close();
      coordinator.close();
    }
  }

  private static PushGradientsRequest push(String trainer, float a, float b) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .addGradients(gradient("w", 0, a, b))
        .build();
  }

  @Test
  void twoTrainersPushingOverGrpc_completeOneStepTogether() throws Exception {
    var stub = start(Duration.ofSeconds(10));
    ListenableFuture<PullParametersResponse> pull =
        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
            .pullParameters(PullParametersRequest.newBuilder().setMinStep(1).build());
    ListenableFuture<PushGradientsResponse> p1 =
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push("t1", 1, 1));
    ListenableFuture<PushGradientsResponse> p2 =
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push("t2", 2, 2));
    assertThat(p1.get(10, TimeUnit.SECONDS).getStep()).isEqualTo(1);
    assertThat(p2.get(10, TimeUnit.SECONDS).getStep()).isEqualTo(1);
    PullParametersResponse r = pull.get(10, TimeUnit.SECONDS);
    assertThat(r.getStep()).isEqualTo(1);
    assertThat(TensorCodec.decode(r.getBlocks(0).getData())).containsExactly(7f, 17f);
  }

  @Test
  void stepTimeout_isAbortedWithSyncAborted() throws Exception {
    var stub = start(Duration.ofMillis(300));
    Throwable t =
        catchThrowable(
            () ->
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .pushGradients(push("t1", 1, 1))
                    .get(10, TimeUnit.SECONDS));
    assertThat(RpcErrors.codeOf(t.getCause())).isEqualTo(Status.Code.ABORTED);
    assertThat(RpcErrors.reasonOf(t.getCause())).isEqualTo(ErrorReason.SYNC_ABORTED);
  }
}
