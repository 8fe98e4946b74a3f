package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A shard's side of a slot move: the old owner refuses the moving slots with MOVED naming the new
 * owner and the move's epoch; the new owner holds a request for them until it sees the commit.
 */
class MovingSlotsTest {
  private static final String TABLE = "emb";
  private static final int WIDTH = 2;

  private static ParameterShard shard(int index) {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init(
            "s",
            List.of(
                ParameterSpec.newBuilder()
                    .setName(TABLE)
                    .addShape(0)
                    .addShape(WIDTH)
                    .setDtype(DataType.FLOAT32)
                    .setSparse(true)
                    .setOptimizer(sgd(1))
                    .build()),
            List.of()));
    shard.finishInit(finish("s", 0));
    shard.indexFrom(() -> index);
    return shard;
  }

  private static PushGradientsRequest push(long row) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t")
        .addSparseGradients(
            SparseRows.newBuilder()
                .setName(TABLE)
                .setDtype(DataType.FLOAT32)
                .addRowIds(row)
                .setData(TensorCodec.encode(new float[] {1, 1})))
        .build();
  }

  private static final SlotMap INITIAL = SlotMap.initial(List.of(), 2);
  private static final long ROW = 5;
  private static final int SLOT = INITIAL.slotOf(ShardPlacement.tableHash(TABLE), ROW);
  private static final SlotMove MOVE =
      SlotMove.newBuilder()
          .setEpoch(1)
          .setId("m")
          .setFrom(INITIAL.ownerOfSlot(SLOT))
          .setTo(1 - INITIAL.ownerOfSlot(SLOT))
          .addSlots(SLOT)
          .setSlotCount(INITIAL.slots())
          .build();

  @Test
  void theOldOwner_refusesAFrozenSlot_withMovedNamingTheNewOwnerAndTheMovesEpoch() {
    ParameterShard old = shard(MOVE.getFrom());
    ShardMoves moves = new ShardMoves(old);
    moves.setPlacement(INITIAL, new MovingSlots(MOVE), null);

    ServiceException e = catchThrowableOfType(ServiceException.class, () -> old.push(push(ROW)));
    assertThat(e.reason()).isEqualTo(ErrorReason.MOVED);
    assertThat(e.metadata())
        .containsEntry("owner", Integer.toString(MOVE.getTo()))
        .containsEntry("epoch", "1")
        .containsEntry("slot", Integer.toString(SLOT));
    assertThat(old.step()).isZero();

    // rolled back: served again
    moves.setPlacement(INITIAL, null, null);
    assertThat(old.push(push(ROW))).isEqualTo(1);
  }

  @Test
  void aRestartedOldOwner_dropsTheRowsItsLogReplayedOfSlotsThatMovedAway() {
    ParameterShard old = shard(MOVE.getFrom());
    ShardMoves moves = new ShardMoves(old);
    long hash = ShardPlacement.tableHash(TABLE);
    long kept = ROW + 1;
    while (INITIAL.ownerOfRow(hash, kept) != MOVE.getFrom() || INITIAL.slotOf(hash, kept) == SLOT) {
      kept++;
    }
    // as a restart replays them: records are not checked for ownership
    old.push(push(ROW));
    old.push(push(kept));
    assertThat(old.sparseTable(TABLE).orElseThrow().rows()).isEqualTo(2);

    MoveCounts dropped = moves.dropUnowned(INITIAL.with(MOVE), MOVE.getFrom());
    assertThat(dropped.rows()).isOne();
    assertThat(old.sparseTable(TABLE).orElseThrow().rows()).isOne();
    assertThat(old.sparseTable(TABLE).orElseThrow().evictions()).isZero();
  }

  @Test
  @Timeout(10)
  void theNewOwner_holdsARequestForAnIncomingSlot_untilTheCommit() throws Exception {
    ParameterShard next = shard(MOVE.getTo());
    ShardMoves moves = new ShardMoves(next);
    moves.setPlacement(INITIAL, null, new MovingSlots(MOVE));

    CompletableFuture<Long> pushed = CompletableFuture.supplyAsync(() -> next.push(push(ROW)));
    Thread.sleep(300);
    assertThat(pushed).isNotDone();
    assertThat(next.step()).isZero();

    moves.setPlacement(INITIAL.with(MOVE), null, null);
    assertThat(pushed.get(5, TimeUnit.SECONDS)).isEqualTo(1);
  }

  /**
   * The new owner makes a move durable with one log record (the copy and the forwarded pushes), not
   * a checkpoint; replaying it rebuilds the moved rows exactly, on a fresh shard and on one that
   * holds them already (a checkpoint cut before the record: the copy replaces the rows).
   */
  @Test
  void theNewOwner_logsTheMoveInOneRecord_whoseReplayRebuildsTheMovedRowsExactly()
      throws Exception {
    ParameterShard old = shard(MOVE.getFrom());
    old.push(push(ROW));
    old.push(push(ROW));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    MovingSlots m = new MovingSlots(MOVE);
    new ShardMoves(old).writeCopy(m, out, () -> {});
    ByteString copy = ByteString.copyFrom(out.toByteArray());
    WalRecord forwarded = WalRecord.newBuilder().addPushes(push(ROW)).setInitId("s").build();

    List<WalRecord> logged = new ArrayList<>();
    ParameterShard next = new ParameterShard(true);
    next.indexFrom(MOVE::getTo);
    next.attachLog(
        new PushLog() {
          @Override
          public void append(WalRecord record) {
            logged.add(record);
          }

          @Override
          public long cut() {
            return 0;
          }

          @Override
          public boolean enabled() {
            return true;
          }
        });
    ShardMoves moves = new ShardMoves(next);
    moves.install(ShardCheckpoint.parseFrom(copy), m);
    assertThat(moves.applyForwarded(forwarded)).isTrue();
    assertThat(moves.applyForwarded(forwarded)).isTrue();
    assertThat(moves.logMovedIn(m, copy, List.of(forwarded, forwarded))).isTrue();
    assertThat(logged).hasSize(1);
    assertThat(row(next)).containsExactly(-4f, -4f);

    ParameterShard restarted = new ParameterShard(true);
    restarted.indexFrom(MOVE::getTo);
    assertThat(restarted.replay(logged.get(0))).isTrue();
    assertThat(row(restarted)).containsExactly(-4f, -4f);
    assertThat(next.replay(logged.get(0))).isTrue();
    assertThat(row(next)).containsExactly(-4f, -4f);

    ParameterShard unlogged = new ParameterShard(true);
    assertThat(new ShardMoves(unlogged).logMovedIn(m, copy, List.of())).isFalse();
  }

  private static float[] row(ParameterShard shard) {
    return TensorCodec.decode(
        shard
            .pull(
                PullParametersRequest.newBuilder()
                    .addSparseRows(SparseRowsRef.newBuilder().setName(TABLE).addRowIds(ROW))
                    .build())
            .getSparseRows(0)
            .getData());
  }
}
