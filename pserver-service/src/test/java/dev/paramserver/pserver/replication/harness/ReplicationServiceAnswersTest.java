package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a pserver that is not a backup answers a primary: only one that serves the shard itself
 * deposes the sender (NOT_PRIMARY); one that has not set its backup role up yet asks it to retry.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ReplicationServiceAnswersTest {
  private final InMemoryCoordinator coordinator = new InMemoryCoordinator();
  private final InProcessPserver pserver =
      new InProcessPserver(
          "answers", coordinator, FaultyNetwork.reliable(), ReplicaPair.REPLICATION_TIMEOUT);
  private final ManagedChannel channel =
      InProcessChannelBuilder.forName(pserver.name).directExecutor().build();

  @AfterEach
  void tearDown() {
    Channels.close(channel);
    pserver.close();
    coordinator.close();
  }

  @Test
  void replicate_toAPserverNotYetABackup_isUnavailable_notDeposing() {
    Throwable t = catchThrowable(() -> replicate(1));

    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(RpcErrors.reasonOf(t)).isNotEqualTo(ErrorReason.NOT_PRIMARY);
  }

  @Test
  void replicate_toThePrimaryOfTheShard_isNotPrimary() {
    pserver.registerAsPrimary();

    Throwable t = catchThrowable(() -> replicate(1));

    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.NOT_PRIMARY);
  }

  private void replicate(long epoch) {
    ShardReplicationGrpc.newBlockingStub(channel)
        .withDeadlineAfter(5, TimeUnit.SECONDS)
        .replicate(
            ReplicateRequest.newBuilder()
                .setIndex(InProcessPserver.INDEX)
                .setEpoch(epoch)
                .setGeneration(1)
                .setSequence(1)
                .setRecord(WalRecord.newBuilder().setInitId(Trainers.INIT_ID))
                .build());
  }
}
