package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.placement.ElasticCluster.TABLE;
import static dev.paramserver.pserver.placement.ElasticCluster.WIDTH;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Attempts of one slot move are fenced (docs/explanation/elastic.md, "Retries"): the coordinator
 * rolls a move back and begins it again with the same id, epoch and slots but another {@code
 * attempt}, while the first attempt may still run. The old owner cancels the running attempt before
 * the new one starts; the new owner applies only the chunks of the attempt it takes in, and an old
 * attempt's late failure never drops the new one's staging. Real pservers and etcd; the attempts
 * overlap because one is held (its MoveIn takes no data), not by timing.
 */
class FencedMoveAttemptsTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final int ROWS = 3000;

  /**
   * Holds the MoveIn streams of attempt {@code attempt}: once the move is named, the stream takes
   * no more data (as a new owner behind a stalled link) until released.
   */
  static final class Hold implements ClientInterceptor {
    final long attempt;
    final CountDownLatch reached = new CountDownLatch(1);
    volatile boolean released;

    Hold(long attempt) {
      this.attempt = attempt;
    }

    @Override
    public <Q, R> ClientCall<Q, R> interceptCall(
        MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
      ClientCall<Q, R> call = next.newCall(method, options);
      if (!method.getFullMethodName().equals(SlotMovesGrpc.getMoveInMethod().getFullMethodName())) {
        return call;
      }
      return new ForwardingClientCall.SimpleForwardingClientCall<>(call) {
        private volatile boolean held;

        @Override
        public void sendMessage(Q message) {
          if (message instanceof MoveInChunk c
              && c.hasMove()
              && c.getMove().getAttempt() == attempt) {
            held = true;
          }
          super.sendMessage(message);
        }

        @Override
        public boolean isReady() {
          if (held && !released) {
            reached.countDown();
            return false;
          }
          return super.isReady();
        }
      };
    }
  }

  /** The first move of growing 2 -> 3 pservers out of pserver 0, epoch 1. */
  static SlotMove firstMoveOf0(SlotMap start, String id) {
    return start.movesTo(start.resized(3), 512).stream()
        .filter(m -> m.getFrom() == 0)
        .findFirst()
        .orElseThrow()
        .toBuilder()
        .setEpoch(1)
        .setId(id)
        .build();
  }

  static PlacementPusher startPusher(
      ElasticCluster c, PlacementPusher.Sums sums, long seed, List<Thread> threads) {
    PlacementPusher pusher = new PlacementPusher(c, "t0", ROWS, 2, seed, sums);
    threads.add(pusher.startThread());
    Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= 20, "pushes before the move");
    return pusher;
  }

  static void finish(
      ElasticCluster c,
      PlacementPusher pusher,
      PlacementPusher.Sums sums,
      List<Thread> threads,
      SlotMap map)
      throws InterruptedException {
    int steps = pusher.steps.get();
    Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= steps + 20, "pushes after");
    pusher.stopAndJoin(threads.toArray(Thread[]::new));
    for (int i = 0; i < 3; i++) {
      int index = i;
      Poll.until(
          Duration.ofSeconds(10),
          () -> c.epochServed(index) == map.epoch(),
          "pserver " + i + " serving epoch " + map.epoch());
    }
    ElasticMoveTest.assertValues(c, map, sums);
  }

  @Test
  @Timeout(120)
  void aRetriedMove_cancelsTheAttemptStillRunning_andNothingIsLostOrAppliedTwice()
      throws Exception {
    Hold hold = new Hold(1);
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.start(0, 2, new ChannelFactory(null, List.of(hold)));
      c.start(1, 2);
      c.initialise(2);
      c.setDesired(3);
      c.start(2, 3);
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      List<Thread> threads = new ArrayList<>();
      PlacementPusher pusher = startPusher(c, sums, 19, threads);

      SlotMap start = c.committed(2);
      SlotMove planned = firstMoveOf0(start, "retried-0");
      SlotMove first = planned.toBuilder().setAttempt(1).build();
      assertThat(c.store.begin(c.store.read(), first)).isTrue();
      CompletableFuture<MoveOutResponse> out1 =
          CompletableFuture.supplyAsync(() -> c.moves(0).moveOut(first));
      assertThat(hold.reached.await(30, TimeUnit.SECONDS))
          .as("attempt 1 cut its copy and waits for the new owner")
          .isTrue();
      int steps = pusher.steps.get();
      Poll.until(
          Duration.ofSeconds(20),
          () -> pusher.steps.get() >= steps + 10,
          "pushes while attempt 1 is held (its tap takes their records)");

      // the coordinator lost attempt 1's call: it rolls the move back and begins it again
      assertThat(c.store.abort(c.store.read())).isTrue();
      SlotMove second = planned.toBuilder().setAttempt(2).build();
      assertThat(c.store.begin(c.store.read(), second)).isTrue();
      MoveOutResponse answer = c.moves(0).moveOut(second);
      assertThat(answer.getRows()).isPositive();
      SlotMap moved = start.with(second);
      assertThat(c.store.commit(c.store.read(), moved.toProto())).isTrue();
      int after = pusher.steps.get();
      Poll.until(
          Duration.ofSeconds(20),
          () -> pusher.steps.get() >= after + 10,
          "pushes served by the new owner");

      // whatever attempt 1 still had to send now goes: it must change nothing
      hold.released = true;
      Throwable failed = null;
      try {
        out1.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        failed = e.getCause();
      }
      finish(c, pusher, sums, threads, moved);
      assertThat(failed).as("attempt 1, cancelled by attempt 2").isNotNull();
      assertThat(Status.fromThrowable(failed).getCode())
          .isIn(Status.Code.UNAVAILABLE, Status.Code.CANCELLED);
      assertThat(
              c.ps(0)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                  .getMoveInProgress())
          .isEmpty();
    }
  }

  @Test
  @Timeout(120)
  void aLateChunkOrFailureOfAnOldAttempt_neverTouchesTheCurrentAttemptsSlots() throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      List<Thread> threads = new ArrayList<>();
      PlacementPusher pusher = startPusher(c, sums, 23, threads);

      SlotMap start = c.committed(2);
      SlotMove planned = firstMoveOf0(start, "stale-0");
      SlotMove first = planned.toBuilder().setAttempt(1).build();
      assertThat(c.store.begin(c.store.read(), first)).isTrue();
      // the test is attempt 1's old owner: it names the move to the new owner, then stalls
      CompletableFuture<MoveInResponse> staleAnswer = new CompletableFuture<>();
      StreamObserver<MoveInChunk> stale =
          SlotMovesGrpc.newStub(c.channel(2))
              .withDeadlineAfter(60, TimeUnit.SECONDS)
              .moveIn(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(MoveInResponse value) {
                      staleAnswer.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                      staleAnswer.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                      staleAnswer.completeExceptionally(new IllegalStateException("no answer"));
                    }
                  });
      stale.onNext(MoveInChunk.newBuilder().setMove(first).build());
      PlacementFollower newOwner = c.context(2).getBean(PlacementFollower.class);
      Poll.until(
          Duration.ofSeconds(20), () -> newOwner.incoming() != null, "pserver 2 expecting it");

      assertThat(c.store.abort(c.store.read())).isTrue();
      SlotMove second = planned.toBuilder().setAttempt(2).build();
      assertThat(c.store.begin(c.store.read(), second)).isTrue();
      assertThat(c.moves(0).moveOut(second).getRows()).isPositive();

      // attempt 1's stream goes on after attempt 2 was taken in: a record of a moving row (a
      // gradient nobody acknowledged), then it ends before caught_up (a failure)
      SlotMap moved = start.with(second);
      long row = rowMovedTo2(moved);
      stale.onNext(MoveInChunk.newBuilder().setRecord(recordOf(row)).build());
      stale.onCompleted();
      Throwable refused = null;
      try {
        staleAnswer.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        refused = e.getCause();
      }
      assertThat(refused).as("attempt 1's stream refused").isNotNull();
      assertThat(c.store.commit(c.store.read(), moved.toProto())).isTrue();
      finish(c, pusher, sums, threads, moved);
    }
  }

  private static long rowMovedTo2(SlotMap moved) {
    long hash = ShardPlacement.tableHash(TABLE);
    for (long id = 0; ; id++) {
      if (moved.ownerOfRow(hash, id) == 2) {
        return id;
      }
    }
  }

  /** A forwarded record: a push of 1000 to every element of {@code row}, by a trainer "stale". */
  private static WalRecord recordOf(long row) {
    float[] g = new float[WIDTH];
    Arrays.fill(g, 1000f);
    return WalRecord.newBuilder()
        .setInitId(ElasticCluster.INIT)
        .addPushes(
            PushGradientsRequest.newBuilder()
                .setTrainerId("stale")
                .setSession("s")
                .setStep(1)
                .setOrigin(1)
                .addSparseGradients(
                    SparseRows.newBuilder()
                        .setName(TABLE)
                        .setDtype(DataType.FLOAT32)
                        .addRowIds(row)
                        .setData(TensorCodec.encode(g))))
        .build();
  }
}
