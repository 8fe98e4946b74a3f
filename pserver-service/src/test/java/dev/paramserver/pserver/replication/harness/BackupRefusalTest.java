package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A backup's "you are not the primary" is checked against etcd before the primary steps down. Seen
 * in the fault soak: a backup that lost its lease and was registering again refused its primary's
 * records as deposed; the primary stepped down and gave up its shard, and the backup, registered
 * again without a copy, took the shard over from the last checkpoint: the pushes acknowledged since
 * were lost. Here the backup refuses every call so; etcd still says the primary owns the shard.
 */
@Timeout(60)
class BackupRefusalTest {
  private static final long SEED = 27;

  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();

  @Test
  void aBackupThatRefusesThePrimary_doesNotDeposeAnOwnerEtcdConfirms() throws Exception {
    InMemoryCoordinator etcd = new InMemoryCoordinator();
    FaultyNetwork network = FaultyNetwork.reliable();
    AtomicInteger refusals = new AtomicInteger();
    String liar = "refusing-backup-" + System.nanoTime();
    grpc.startServer(liar, b -> b.directExecutor().addService(new RefusingBackup(refusals)));
    try (etcd;
        network;
        InProcessPserver a = new InProcessPserver("ps-a", etcd, network, Duration.ofMillis(300))) {
      a.registerAsPrimary();
      Trainers.initialise(a.shard);
      etcd.kv()
          .put(
              etcd.keys().psBackup(InProcessPserver.INDEX),
              liar.getBytes(StandardCharsets.UTF_8),
              etcd.grantLease(Duration.ofSeconds(30)));
      Poll.until(
          Duration.ofSeconds(10), Duration.ofMillis(5), () -> refusals.get() > 0, "a refusal");

      // pushes go on: each is answered on the primary's log alone, after etcd confirmed ownership
      for (int step = 1; step <= 5; step++) {
        PushOutcome r = a.shard.pushOutcome(Trainers.push(SEED, 0, step));
        assertThat(r.duplicate()).isFalse();
      }
      assertThat(refusals.get()).isGreaterThan(0);
      assertThat(a.lifecycle.role()).isEqualTo(ShardRole.PRIMARY);
      assertThat(etcd.kv().get(etcd.keys().ps(InProcessPserver.INDEX))).isPresent();
      assertThat(a.shard.step()).isEqualTo(5);
      assertThat(a.unreplicated()).isEqualTo(5);
    }
  }

  /** Answers every copy and record as a pserver that holds no backup role any more does. */
  private static final class RefusingBackup extends ShardReplicationGrpc.ShardReplicationImplBase {
    private final AtomicInteger refusals;

    RefusingBackup(AtomicInteger refusals) {
      this.refusals = refusals;
    }

    private Throwable refusal() {
      refusals.incrementAndGet();
      return RpcErrors.toStatus(
          ErrorReason.NOT_PRIMARY, "this pserver is no longer a backup of shard 0");
    }

    @Override
    public StreamObserver<FillChunk> fill(StreamObserver<FillResponse> out) {
      return new StreamObserver<>() {
        @Override
        public void onNext(FillChunk chunk) {}

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {
          out.onError(refusal());
        }
      };
    }

    @Override
    public void replicate(ReplicateRequest request, StreamObserver<ReplicateResponse> out) {
      out.onError(refusal());
    }
  }
}
