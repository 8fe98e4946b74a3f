package dev.paramserver.pserver.replication.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.Size;

/**
 * A stranger (not the shard's primary: any epoch but the primary's) calling Replicate or Fill on
 * the backup of a synced pair, or on the primary, which is no backup, is refused with {@code
 * NOT_PRIMARY} (the primary, for another shard's index: {@code SHUTTING_DOWN}, retry; a Fill
 * without a chunk: {@code BAD_ARGUMENT}), and neither copy changes: the backup stays synced, holds
 * the primary's shard bit for bit, and keeps up with the primary's next pushes. The stranger's
 * records are a trainer's real pushes or garbage, its copies random bytes or a header only. Tries:
 * {@code jqwik.tries.default}, at most 10 (a synced pair each).
 */
class StrangerReplicationFuzzTest {

  /** One call of the stranger. */
  record StrangerCall(boolean toBackup, boolean fill, long epochChoice, long seed) {
    @Override
    public String toString() {
      return (fill ? "Fill" : "Replicate")
          + " to the "
          + (toBackup ? "backup" : "primary")
          + " (epoch choice "
          + epochChoice
          + ", seed "
          + seed
          + ")";
    }

    /** An epoch that is not {@code real}: older, newer, negative, zero or the extremes. */
    long epoch(long real) {
      long e =
          switch ((int) Math.floorMod(epochChoice, 7L)) {
            case 0 -> 0;
            case 1 -> -1;
            case 2 -> real - 1;
            case 3 -> real + 1;
            case 4 -> Long.MAX_VALUE;
            case 5 -> Long.MIN_VALUE;
            default -> real + 1 + Math.floorMod(seed, 1_000_000L);
          };
      return e == real ? real + 2 : e;
    }
  }

  @Property(tries = 10, shrinking = ShrinkingMode.BOUNDED)
  void stranger_isRefusedWithAReason_andNeitherCopyChanges(
      @ForAll @Size(min = 1, max = 6) List<@From("calls") StrangerCall> calls) throws Exception {
    Schedule schedule = new Schedule(1, 3, -1, 0, List.of(), List.of(), 2, 11);
    try (ReplicaPair pair = new ReplicaPair(schedule)) {
      assertThat(pair.run(schedule).failures()).isEmpty();
      pair.awaitSynced(pair.primary, pair.backup);
      long epoch =
          pair.coordinator
              .kv()
              .get(pair.coordinator.keys().ps(InProcessPserver.INDEX))
              .orElseThrow()
              .createRevision();
      ShardState primaryBefore = ShardState.of(pair.primary.state());
      ShardState backupBefore = ShardState.of(pair.backup.state());
      for (StrangerCall call : calls) {
        InProcessPserver target = call.toBackup() ? pair.backup : pair.primary;
        Throwable t = send(target, call, call.epoch(epoch));
        assertThat(t).as("%s was accepted", call).isNotNull();
        assertThat(RpcErrors.reasonOf(t))
            .as("reason of %s: %s", call, t)
            .isIn(ErrorReason.NOT_PRIMARY, ErrorReason.SHUTTING_DOWN, ErrorReason.BAD_ARGUMENT);
        assertThat(Status.fromThrowable(t).getCode())
            .isEqualTo(RpcErrors.codeFor(RpcErrors.reasonOf(t)));
        assertThat(ShardState.of(pair.primary.state()).differences(primaryBefore))
            .as("primary after %s", call)
            .isEmpty();
        assertThat(ShardState.of(pair.backup.state()).differences(backupBefore))
            .as("backup after %s", call)
            .isEmpty();
        assertThat(pair.backup.role()).isEqualTo(ReplicaRole.REPLICA_BACKUP_SYNCED);
      }
      // the pair still works: the primary's next pushes reach the backup
      Trainers.run(pair.primary.shard, schedule, schedule.pushes() + 1, n -> {});
      pair.awaitSynced(pair.primary, pair.backup);
      assertThat(
              ShardState.of(pair.backup.state()).differences(ShardState.of(pair.primary.state())))
          .isEmpty();
    }
  }

  @Provide
  Arbitrary<StrangerCall> calls() {
    return Combinators.combine(
            Arbitraries.of(true, false),
            Arbitraries.of(true, false),
            Arbitraries.longs(),
            Arbitraries.longs())
        .as(StrangerCall::new);
  }

  /** Sends {@code call} over the in-process transport; the failure, or null when it succeeded. */
  private static Throwable send(InProcessPserver target, StrangerCall call, long epoch)
      throws Exception {
    ManagedChannel channel = InProcessChannelBuilder.forName(target.name).build();
    try {
      Random r = new Random(call.seed());
      if (!call.fill()) {
        ReplicateRequest request =
            ReplicateRequest.newBuilder()
                .setIndex(r.nextBoolean() ? InProcessPserver.INDEX : r.nextInt())
                .setEpoch(epoch)
                .setGeneration(r.nextBoolean() ? 1 + r.nextInt(3) : r.nextLong())
                .setSequence(r.nextBoolean() ? 1 + r.nextInt(5) : r.nextLong())
                .setRecord(record(r))
                .build();
        return catchThrowable(
            () ->
                ShardReplicationGrpc.newBlockingStub(channel)
                    .withDeadlineAfter(10, TimeUnit.SECONDS)
                    .replicate(request));
      }
      CompletableFuture<FillResponse> answer = new CompletableFuture<>();
      StreamObserver<FillChunk> out =
          ShardReplicationGrpc.newStub(channel)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .fill(observer(answer));
      int chunks = r.nextInt(3);
      for (int i = 0; i < chunks; i++) {
        byte[] data = new byte[r.nextInt(200)];
        r.nextBytes(data);
        out.onNext(
            FillChunk.newBuilder()
                .setIndex(InProcessPserver.INDEX)
                .setEpoch(epoch)
                .setGeneration(r.nextBoolean() ? 1 + r.nextInt(3) : r.nextLong())
                .setInitialised(r.nextBoolean())
                .setData(ByteString.copyFrom(data))
                .build());
      }
      out.onCompleted();
      try {
        answer.get(15, TimeUnit.SECONDS);
        return null;
      } catch (ExecutionException e) {
        return e.getCause();
      }
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  /** A trainer's real push, a record of another init, or an empty one. */
  private static WalRecord record(Random r) {
    return switch (r.nextInt(3)) {
      case 0 ->
          WalRecord.newBuilder()
              .setInitId(Trainers.INIT_ID)
              .addPushes(Trainers.push(r.nextLong(), 0, 1 + r.nextInt(10)))
              .build();
      case 1 ->
          WalRecord.newBuilder()
              .setInitId("another-init")
              .addPushes(Trainers.push(r.nextLong(), 1, 1))
              .build();
      default -> WalRecord.getDefaultInstance();
    };
  }

  private static StreamObserver<FillResponse> observer(CompletableFuture<FillResponse> answer) {
    return new StreamObserver<>() {
      @Override
      public void onNext(FillResponse value) {
        answer.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        answer.completeExceptionally(t);
      }

      @Override
      public void onCompleted() {
        answer.complete(FillResponse.getDefaultInstance());
      }
    };
  }
}
