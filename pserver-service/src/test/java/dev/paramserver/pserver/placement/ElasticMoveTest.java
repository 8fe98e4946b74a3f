package dev.paramserver.pserver.placement;

import static dev.paramserver.pserver.placement.ElasticCluster.BLOCK;
import static dev.paramserver.pserver.placement.ElasticCluster.BLOCKS;
import static dev.paramserver.pserver.placement.ElasticCluster.DENSE;
import static dev.paramserver.pserver.placement.ElasticCluster.TABLE;
import static dev.paramserver.pserver.placement.ElasticCluster.WIDTH;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Elastic placement end to end on the pserver side (docs/explanation/elastic.md): three real
 * pservers of one job, trainers pushing identified integer gradients by the committed map while the
 * test, as the coordinator, grows the job from 2 to 3 pservers and shrinks it back, one fenced move
 * at a time. Nothing acknowledged is lost or applied twice: every value equals its initial value
 * minus the acknowledged gradients, bit for bit.
 */
class ElasticMoveTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final int ROWS = 3000;

  /** Makes every move of {@code cur -> target}; returns the map committed last. */
  private static SlotMap moveAll(
      ElasticCluster c, SlotMap cur, SlotMap target, String name, List<MoveOutResponse> out) {
    List<SlotMove> moves = cur.movesTo(target, 512);
    for (int k = 0; k < moves.size(); k++) {
      PlacementStore.Read read = c.store.read();
      SlotMove move =
          moves.get(k).toBuilder().setEpoch(read.epoch() + 1).setId(name + "-" + k).build();
      assertThat(c.store.begin(read, move)).as("begin " + move.getId()).isTrue();
      out.add(c.moves(move.getFrom()).moveOut(move));
      SlotMap next = cur.with(move);
      assertThat(c.store.commit(c.store.read(), next.toProto()))
          .as("commit " + move.getId())
          .isTrue();
      cur = next;
    }
    return cur;
  }

  @Test
  @Timeout(240)
  void growingAndShrinking_underPushes_losesNothingAndAppliesNothingTwice() throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.start(0, 2);
      c.start(1, 2);
      c.initialise(2);
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      List<PlacementPusher> pushers =
          List.of(
              new PlacementPusher(c, "t0", ROWS, 2, 7, sums),
              new PlacementPusher(c, "t1", ROWS, 2, 11, sums));
      List<Thread> threads = new ArrayList<>();
      for (PlacementPusher p : pushers) {
        threads.add(p.startThread());
      }
      Poll.until(
          Duration.ofSeconds(20),
          () -> pushers.stream().allMatch(p -> p.steps.get() >= 20),
          "pushes before any move");

      // grow: the third pserver claims index 2 once ps_desired is 3
      c.setDesired(3);
      c.start(2, 3);
      SlotMap start = c.committed(2);
      List<MoveOutResponse> answers = new ArrayList<>();
      SlotMap grown = moveAll(c, start, start.resized(3), "grow", answers);
      assertThat(grown.slotCounts()[2]).isEqualTo(16384 / 3);
      int stepsAfterGrow = pushers.get(0).steps.get();
      Poll.until(
          Duration.ofSeconds(20),
          () -> pushers.get(0).steps.get() >= stepsAfterGrow + 20,
          "pushes after the grow");

      // a MOVED answer names the owner and the epoch; a push acknowledged before is a duplicate
      Poll.until(
          Duration.ofSeconds(10),
          () -> c.epochServed(0) == grown.epoch(),
          "pserver 0 serving epoch " + grown.epoch());
      long movedRow = rowOwnedBy(grown, 2, start, 0);
      StatusRuntimeException refused =
          catchThrowableOfType(
              StatusRuntimeException.class, () -> c.ps(0).pushGradients(probe(movedRow)));
      assertThat(RpcErrors.reasonOf(refused)).isEqualTo(ErrorReason.MOVED);
      Map<String, String> meta = RpcErrors.metadataOf(refused);
      assertThat(meta)
          .containsEntry("owner", "2")
          .containsEntry("epoch", Long.toString(grown.epoch()))
          .containsEntry("index", "0")
          .containsEntry(
              "slot", Integer.toString(grown.slotOf(ShardPlacement.tableHash(TABLE), movedRow)));
      PushGradientsRequest first = pushers.get(0).firstAcknowledgedBy0.get();
      assertThat(first).isNotNull();
      assertThat(c.ps(0).pushGradients(first).getDuplicate()).isTrue();

      // shrink back to 2
      SlotMap shrunk = moveAll(c, grown, grown.resized(2), "shrink", answers);
      assertThat(shrunk.pservers()).isEqualTo(2);
      int stepsAfterShrink = pushers.get(0).steps.get();
      Poll.until(
          Duration.ofSeconds(20),
          () -> pushers.get(0).steps.get() >= stepsAfterShrink + 20,
          "pushes after the shrink");
      pushers.forEach(PlacementPusher::stop);
      for (Thread t : threads) {
        t.join(30_000);
      }
      for (PlacementPusher p : pushers) {
        if (p.failure.get() != null) {
          throw new AssertionError("pusher failed", p.failure.get());
        }
      }
      assertThat(pushers.stream().mapToInt(p -> p.moved.get()).sum())
          .as("pushes refused with MOVED and resent")
          .isPositive();
      assertThat(answers.stream().mapToLong(MoveOutResponse::getRows).sum()).isPositive();
      assertThat(answers.stream().mapToInt(MoveOutResponse::getBlocks).sum()).isPositive();

      for (int i = 0; i < 3; i++) {
        int index = i;
        Poll.until(
            Duration.ofSeconds(10),
            () -> c.epochServed(index) == shrunk.epoch(),
            "pserver " + i + " serving epoch " + shrunk.epoch());
      }
      assertValues(c, shrunk, sums);
    }
  }

  @Test
  @Timeout(180)
  void newOwnerClosedDuringAMove_theMoveIsRolledBack_andTheOldOwnerServesWithNothingLost()
      throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      PlacementPusher pusher = new PlacementPusher(c, "t0", ROWS, 2, 13, sums);
      Thread thread = pusher.startThread();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= 20, "pushes before the move");

      SlotMap start = c.committed(2);
      PlacementStore.Read read = c.store.read();
      SlotMove move =
          start.movesTo(start.resized(3), 512).get(0).toBuilder()
              .setEpoch(1)
              .setId("killed-0")
              .build();
      assertThat(c.store.begin(read, move)).isTrue();
      PlacementFollower b = c.context(2).getBean(PlacementFollower.class);
      CompletableFuture<MoveOutResponse> out =
          CompletableFuture.supplyAsync(() -> c.moves(move.getFrom()).moveOut(move));
      // the new owner is closed while it takes the move in: the move fails (the old owner rolls
      // it back), or the new owner finished it while closing and no commit comes (the old owner
      // rolls it back itself after move-timeout)
      Poll.until(
          Duration.ofSeconds(20),
          () -> b.incoming() != null || out.isDone(),
          "pserver 2 taking the move in");
      c.stop(2);
      Throwable failed = null;
      try {
        out.get(60, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        failed = e.getCause();
      }
      if (failed != null) {
        assertThat(Status.fromThrowable(failed).getCode())
            .isIn(Status.Code.UNAVAILABLE, Status.Code.FAILED_PRECONDITION);
      }
      // the old owner rolled it back (or, when the copy had not reached it, the coordinator does)
      Poll.until(
          Duration.ofSeconds(30),
          () -> {
            PlacementStore.Read r = c.store.read();
            if (r.move().isPresent() && out.isCompletedExceptionally()) {
              c.store.abort(r);
            }
            return c.store.read().move().isEmpty();
          },
          "move rolled back");
      assertThat(c.store.read().epoch()).isZero();
      Poll.until(
          Duration.ofSeconds(10),
          () ->
              c.ps(0)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                  .getMoveInProgress()
                  .isEmpty(),
          "pserver 0 serving its slots again");
      int steps = pusher.steps.get();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= steps + 20, "pushes after");
      pusher.stopAndJoin(thread);
      assertValues(c, c.committed(2), sums);
    }
  }

  @Test
  @Timeout(120)
  void newOwnerRefusingTheMove_theOldOwnerRollsItBackItself_andServesWithNothingLost()
      throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      // pserver 2 holds another initialisation: it refuses the copy once it has it all
      c.initialise(2, 3, "another-init");
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      PlacementPusher pusher = new PlacementPusher(c, "t0", ROWS, 2, 17, sums);
      Thread thread = pusher.startThread();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= 20, "pushes before the move");

      SlotMap start = c.committed(2);
      SlotMove move =
          start.movesTo(start.resized(3), 512).get(0).toBuilder()
              .setEpoch(1)
              .setId("refused-0")
              .build();
      assertThat(c.store.begin(c.store.read(), move)).isTrue();
      StatusRuntimeException failed =
          catchThrowableOfType(
              StatusRuntimeException.class, () -> c.moves(move.getFrom()).moveOut(move));
      assertThat(failed.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(failed.getStatus().getDescription()).contains("refused-0", "rolled back");
      // rolled back by the old owner itself (a fenced delete), before it answered
      assertThat(c.store.read().move()).isEmpty();
      assertThat(c.store.read().epoch()).isZero();
      Poll.until(
          Duration.ofSeconds(10),
          () ->
              c.ps(0)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                  .getMoveInProgress()
                  .isEmpty(),
          "pserver 0 serving its slots again");
      int steps = pusher.steps.get();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= steps + 20, "pushes after");
      pusher.stopAndJoin(thread);
      assertValues(c, c.committed(2), sums);
    }
  }

  @Test
  @Timeout(120)
  void restartedOldOwner_readsTheCommittedMap_andServesAccordingly() throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      PlacementPusher pusher = new PlacementPusher(c, "t0", ROWS, 2, 19, sums);
      Thread thread = pusher.startThread();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= 20, "pushes before the move");
      SlotMap start = c.committed(2);
      SlotMove move =
          start.movesTo(start.resized(3), 512).get(0).toBuilder()
              .setEpoch(1)
              .setId("restart-0")
              .build();
      assertThat(move.getBlocksCount()).isOne();
      assertThat(c.store.begin(c.store.read(), move)).isTrue();
      c.moves(0).moveOut(move);
      SlotMap moved = start.with(move);
      assertThat(c.store.commit(c.store.read(), moved.toProto())).isTrue();
      int steps = pusher.steps.get();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= steps + 20, "pushes after");
      pusher.stopAndJoin(thread);

      c.stop(0);
      c.start(0, 2);
      assertThat(c.epochServed(0)).isEqualTo(1);
      long row = rowOwnedBy(moved, 2, start, 0);
      StatusRuntimeException refused =
          catchThrowableOfType(
              StatusRuntimeException.class, () -> c.ps(0).pushGradients(probe(row)));
      assertThat(RpcErrors.reasonOf(refused)).isEqualTo(ErrorReason.MOVED);
      assertThat(RpcErrors.metadataOf(refused))
          .containsEntry("owner", "2")
          .containsEntry("epoch", "1");
      String block = move.getBlocks(0).getName() + "#" + move.getBlocks(0).getBlock();
      StatusRuntimeException blockRefused =
          catchThrowableOfType(
              StatusRuntimeException.class, () -> c.pullBlock(0, move.getBlocks(0).getBlock()));
      assertThat(RpcErrors.reasonOf(blockRefused)).isEqualTo(ErrorReason.MOVED);
      assertThat(RpcErrors.metadataOf(blockRefused))
          .containsEntry("owner", "2")
          .containsEntry("block", block);
      assertValues(c, moved, sums);
    }
  }

  /**
   * The new owner makes what it took in durable through its write-ahead log before it answers
   * MoveIn, not through a checkpoint: closed right after the moves were committed (its disk as a
   * crash leaves it: the files as they were, without the final checkpoint of a graceful stop) and
   * restarted, it holds the moved rows and blocks bit for bit by replaying its log.
   */
  @Test
  @Timeout(180)
  void newOwnerCrashedAfterMoveIn_restartsFromItsLog_withTheMovedRowsExactly() throws Exception {
    try (ElasticCluster c = new ElasticCluster(etcd)) {
      c.startGrowingFromTwoToThree();
      PlacementPusher.Sums sums = new PlacementPusher.Sums();
      PlacementPusher pusher = new PlacementPusher(c, "t0", ROWS, 2, 23, sums);
      Thread thread = pusher.startThread();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= 20, "pushes before moves");
      SlotMap start = c.committed(2);
      List<MoveOutResponse> answers = new ArrayList<>();
      SlotMap grown = moveAll(c, start, start.resized(3), "crash", answers);
      for (int k = 0; k < answers.size(); k++) {
        MoveOutResponse a = answers.get(k);
        System.out.printf(
            "move crash-%d: stall_ms=%d copy_ms=%d bytes=%d records=%d rows=%d blocks=%d%n",
            k,
            a.getStallMs(),
            a.getCopyMs(),
            a.getBytes(),
            a.getRecords(),
            a.getRows(),
            a.getBlocks());
      }
      int steps = pusher.steps.get();
      Poll.until(Duration.ofSeconds(20), () -> pusher.steps.get() >= steps + 10, "pushes after");
      pusher.stopAndJoin(thread);

      // pserver 2's files as a crash now leaves them (a graceful stop would write a checkpoint:
      // without an index it writes none)
      Path crashed = Files.createTempDirectory("elastic-crashed");
      try {
        copyTree(c.dir(2), crashed);
        c.context(2).getBean(ParameterShard.class).indexFrom(() -> -1);
        c.stop(2);
        TempDirs.deleteRecursively(c.dir(2));
        copyTree(crashed, c.dir(2));
      } finally {
        TempDirs.deleteRecursively(crashed);
      }
      c.start(2, 3);
      Poll.until(
          Duration.ofSeconds(10),
          () -> c.epochServed(2) == grown.epoch(),
          "pserver 2 serving epoch " + grown.epoch());
      assertValues(c, grown, sums);
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> paths = Files.walk(from)) {
      for (Path p : paths.toList()) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
        }
      }
    }
  }

  /** Every block and row, pulled from its owner, equals its initial value minus the sums. */
  static void assertValues(ElasticCluster c, SlotMap map, PlacementPusher.Sums sums) {
    for (int b = 0; b < BLOCKS; b++) {
      float[] expected = ElasticCluster.initialBlock(b);
      for (int i = 0; i < BLOCK; i++) {
        expected[i] -= sums.dense[b][i];
      }
      assertThat(c.pullBlock(map.ownerOfBlock(DENSE, b), b))
          .as("dense block " + b)
          .containsExactly(expected);
    }
    long hash = ShardPlacement.tableHash(TABLE);
    for (int owner = 0; owner < map.pservers(); owner++) {
      List<Long> ids = new ArrayList<>();
      for (long id = 0; id < ROWS; id++) {
        if (map.ownerOfRow(hash, id) == owner) {
          ids.add(id);
        }
      }
      float[] got = c.pullRows(owner, ids);
      for (int k = 0; k < ids.size(); k++) {
        float[] expected = new float[WIDTH];
        float[] sum = sums.rows.get(ids.get(k));
        for (int i = 0; i < WIDTH; i++) {
          expected[i] = sum == null ? 0f : -sum[i];
        }
        assertThat(Arrays.copyOfRange(got, k * WIDTH, (k + 1) * WIDTH))
            .as("row " + ids.get(k) + " on pserver " + owner)
            .containsExactly(expected);
      }
    }
  }

  /** A row {@code map} gives {@code owner} that {@code before} gave {@code previous}. */
  private static long rowOwnedBy(SlotMap map, int owner, SlotMap before, int previous) {
    long hash = ShardPlacement.tableHash(TABLE);
    for (long id = ROWS; ; id++) {
      if (map.ownerOfRow(hash, id) == owner && before.ownerOfRow(hash, id) == previous) {
        return id;
      }
    }
  }

  /** An unidentified push of one row (never applied: it is refused). */
  private static PushGradientsRequest probe(long row) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId("probe")
        .addSparseGradients(
            SparseRows.newBuilder()
                .setName(TABLE)
                .setDtype(DataType.FLOAT32)
                .addRowIds(row)
                .setData(TensorCodec.encode(new float[WIDTH])))
        .build();
  }
}
