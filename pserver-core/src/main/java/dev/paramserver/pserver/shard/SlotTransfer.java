package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.tensor.TensorCodec;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The shard's part of a slot move (docs/explanation/elastic.md): the old owner cuts a copy of the
 * moving slots' rows and the moving blocks and filters the records it applies after the cut to
 * them; the new owner installs that copy; either drops the slots when the placement says they are
 * no longer its own. The copy has the form of a checkpoint (with the shard's description: init id,
 * parameter specs and their optimizers, training mode), so it reuses the checkpoint code.
 */
final class SlotTransfer {
  private SlotTransfer() {}

  /**
   * Writes the moving slots' rows and the moving blocks to {@code out} under the write lock, with
   * the records of the pushes applied ({@link AppliedSteps#forMove}), then runs {@code atCut}
   * (still under it): the copy holds exactly the records applied before.
   *
   * @throws ServiceException NOT_INITIALIZED when the shard is not initialised
   */
  static MoveCounts writeCopy(ParameterShard shard, MovingSlots m, OutputStream out, Runnable atCut)
      throws IOException {
    shard.structure().writeLock().lock();
    try {
      if (!shard.initialised()) {
        throw new ServiceException(
            ErrorReason.NOT_INITIALIZED,
            "pserver " + shard.index() + " is not initialised: it has nothing to move");
      }
      ShardCheckpoint.Builder header =
          ShardCheckpoint.newBuilder()
              .setIndex(Math.max(shard.index(), 0))
              .setFormatVersion(ShardSnapshots.FORMAT_VERSION)
              .setInitId(shard.pendingInitId())
              .setCreatedMs(System.currentTimeMillis());
      shard.parameters().values().stream()
          .map(p -> p.spec)
          .sorted(Comparator.comparing(ParameterSpec::getName))
          .forEach(header::addParameters);
      header.setUnknownFields(ShardSnapshots.modeFields(shard.mode(), shard.staleness()));
      // the pushes applied before the cut travel with the slots (see AppliedSteps#merge)
      header.addAllApplied(shard.pushes.applied().forMove(m.from()));
      int blocks = 0;
      for (DenseBlock b : shard.blocks().values()) {
        if (!m.hasBlock(b.name(), b.block)) {
          continue;
        }
        BlockCheckpoint.Builder bc =
            BlockCheckpoint.newBuilder().setName(b.name()).setBlock(b.block).setOffset(b.offset);
        synchronized (b) {
          bc.setValues(TensorCodec.encode(b.values)).setUpdates(b.updates);
          for (float[] slot : b.slots) {
            bc.addSlots(TensorCodec.encode(slot));
          }
        }
        header.addBlocks(bc);
        blocks++;
      }
      header.build().writeTo(out);
      CodedOutputStream coded = CodedOutputStream.newInstance(out, 1 << 16);
      long[] rows = {0};
      List<SparseTable> tables = new ArrayList<>(shard.tables().values());
      tables.sort(Comparator.comparing(SparseTable::name));
      try {
        for (SparseTable t : tables) {
          t.store.snapshot(
              ShardSnapshots.CHUNK_ROWS,
              c -> {
                SparseRowStore.Chunk kept = keep(c, t, m);
                if (kept.rows() == 0) {
                  return;
                }
                rows[0] += kept.rows();
                try {
                  coded.writeMessage(
                      ShardCheckpoint.SPARSE_TABLES_FIELD_NUMBER, ShardSnapshots.chunkOf(t, kept));
                } catch (IOException e) {
                  throw new UncheckedIOException(e);
                }
              });
        }
      } catch (UncheckedIOException e) {
        throw e.getCause();
      }
      coded.flush();
      atCut.run();
      return new MoveCounts(rows[0], blocks);
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /** The rows of {@code c} whose slot moves. */
  private static SparseRowStore.Chunk keep(SparseRowStore.Chunk c, SparseTable t, MovingSlots m) {
    int width = t.width();
    int n = 0;
    int[] which = new int[c.rows()];
    for (int i = 0; i < c.rows(); i++) {
      if (m.hasRow(t.routingHash, c.ids()[i])) {
        which[n++] = i;
      }
    }
    long[] ids = new long[n];
    float[] values = new float[n * width];
    float[][] slots = new float[c.slots().length][n * width];
    long[] updates = new long[n];
    long[] scores = new long[n];
    for (int j = 0; j < n; j++) {
      int i = which[j];
      ids[j] = c.ids()[i];
      System.arraycopy(c.values(), i * width, values, j * width, width);
      for (int k = 0; k < slots.length; k++) {
        System.arraycopy(c.slots()[k], i * width, slots[k], j * width, width);
      }
      updates[j] = c.updates()[i];
      scores[j] = c.scores()[i];
    }
    return new SparseRowStore.Chunk(ids, values, slots, updates, scores, n);
  }

  /**
   * Replays a move's moved-in record (see {@link ShardMoves#logMovedIn}): installs its copy as the
   * move did, then applies its forwarded pushes in order, as forwarded ones.
   *
   * @return false when skipped (the shard holds another initialisation)
   */
  static boolean replayMovedIn(ParameterShard shard, WalRecord record) {
    ShardCheckpoint copy;
    SlotMove move;
    try {
      copy = ShardCheckpoint.parseFrom(record.getMovedIn());
      move = SlotMove.parseFrom(record.getMovedInMove());
    } catch (InvalidProtocolBufferException e) {
      throw ShardRestore.corrupt("a moved-in log record does not parse: " + e.getMessage());
    }
    if (shard.initialised() && !copy.getInitId().equals(shard.pendingInitId())) {
      return false;
    }
    install(shard, copy, new MovingSlots(move));
    shard.pushes.replayForwarded(
        record.toBuilder().clearMovedIn().clearMovedInMove().setInitId(copy.getInitId()).build());
    return true;
  }

  /**
   * The new owner installs a move's copy under the write lock: an uninitialised shard takes the
   * copy's description (and is initialised); an initialised one must hold the same init id. Rows of
   * the moving slots it holds from an earlier epoch are replaced, blocks replaced.
   *
   * @throws ServiceException INIT_CONFLICT when the shard holds another initialisation
   */
  static MoveCounts install(ParameterShard shard, ShardCheckpoint copy, MovingSlots m) {
    shard.structure().writeLock().lock();
    try {
      if (!shard.initialised()) {
        shard.clear();
        for (ParameterSpec spec : copy.getParametersList()) {
          Parameter p = Parameter.of(spec);
          shard.parameters().put(p.name(), p);
          if (p.sparse()) {
            shard.defineTable(p);
          }
        }
        shard.setDefinition(
            copy.getInitId(), ShardSnapshots.modeOf(copy), ShardSnapshots.stalenessOf(copy));
        shard.setInitialised(true);
      } else if (!copy.getInitId().equals(shard.pendingInitId())) {
        throw new ServiceException(
            ErrorReason.INIT_CONFLICT,
            "move "
                + m.id()
                + " carries init '"
                + copy.getInitId()
                + "' but pserver "
                + shard.index()
                + " holds init '"
                + shard.pendingInitId()
                + "': the pservers of one job must hold one initialisation");
      }
      for (SparseTable t : shard.tables().values()) {
        t.store.removeIf(id -> m.hasRow(t.routingHash, id));
      }
      long rows = 0;
      for (SparseTableCheckpoint tc : copy.getSparseTablesList()) {
        SparseTable t = shard.tables().get(tc.getName());
        if (t == null) {
          throw ShardRestore.corrupt("move copy table " + tc.getName() + " has no definition");
        }
        ShardRestore.addRows(t, tc);
        rows += tc.getRowIdsCount();
      }
      for (BlockCheckpoint bc : copy.getBlocksList()) {
        Parameter p = shard.parameters().get(bc.getName());
        if (p == null || p.sparse() || bc.getBlock() >= p.blockCount) {
          throw ShardRestore.corrupt(
              "move copy block " + bc.getName() + "#" + bc.getBlock() + " has no definition");
        }
        shard
            .blocks()
            .put(DenseBlock.key(bc.getName(), bc.getBlock()), ShardSnapshots.block(p, bc));
      }
      shard.pushes.applied().merge(copy.getAppliedList());
      return new MoveCounts(rows, copy.getBlocksCount());
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /** Drops the moving slots' rows and the moving blocks (moved away, or a move rolled back). */
  static MoveCounts drop(ParameterShard shard, MovingSlots m) {
    shard.structure().writeLock().lock();
    try {
      int blocks = 0;
      for (var it = shard.blocks().values().iterator(); it.hasNext(); ) {
        DenseBlock b = it.next();
        if (m.hasBlock(b.name(), b.block)) {
          it.remove();
          blocks++;
        }
      }
      long rows = 0;
      for (SparseTable t : shard.tables().values()) {
        rows += t.store.removeIf(id -> m.hasRow(t.routingHash, id));
      }
      return new MoveCounts(rows, blocks);
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /**
   * Drops the rows and blocks {@code map} gives another index than {@code index}: what a restarted
   * pserver's checkpoint and log hold of slots that moved away since.
   */
  static MoveCounts dropUnowned(ParameterShard shard, SlotMap map, int index) {
    shard.structure().writeLock().lock();
    try {
      int blocks = 0;
      for (var it = shard.blocks().values().iterator(); it.hasNext(); ) {
        DenseBlock b = it.next();
        int owner = map.ownerOfBlock(b.name(), b.block);
        if (owner >= 0 && owner != index) {
          it.remove();
          blocks++;
        }
      }
      long rows = 0;
      for (SparseTable t : shard.tables().values()) {
        rows += t.store.removeIf(id -> map.ownerOfRow(t.routingHash, id) != index);
      }
      return new MoveCounts(rows, blocks);
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /**
   * The part of {@code record} that touches the moving slots and blocks (null when none), a copy
   * sharing no bytes with it. Each push keeps its identity; one this server took first ({@code
   * origin} 0) names it as {@code fromIndex + 1}, as a trainer resending it after MOVED would, so
   * the new owner keeps it apart from its own part of the same step.
   */
  static WalRecord filter(WalRecord record, MovingSlots m, int fromIndex) {
    WalRecord.Builder out = WalRecord.newBuilder().setInitId(record.getInitId());
    for (PushGradientsRequest p : record.getPushesList()) {
      PushGradientsRequest.Builder kept =
          p.toBuilder().clearGradients().clearSparseGradients().setReturnValues(false);
      kept.setReturnRows(false);
      if (p.getOrigin() == 0) {
        kept.setOrigin(fromIndex + 1);
      }
      boolean any = false;
      for (TensorBlock g : p.getGradientsList()) {
        if (m.hasBlock(g.getName(), g.getBlock())) {
          kept.addGradients(
              TensorBlock.newBuilder(g).setData(ByteString.copyFrom(g.getData().toByteArray())));
          any = true;
        }
      }
      for (SparseRows rows : p.getSparseGradientsList()) {
        SparseRows part = keepRows(rows, m);
        if (part != null) {
          kept.addSparseGradients(part);
          any = true;
        }
      }
      if (any) {
        out.addPushes(kept);
      }
    }
    return out.getPushesCount() == 0 ? null : out.build();
  }

  private static SparseRows keepRows(SparseRows rows, MovingSlots m) {
    long hash = ShardPlacement.tableHash(rows.getName());
    int n = rows.getRowIdsCount();
    if (n == 0) {
      return null;
    }
    int size = TensorCodec.elementSize(rows.getDtype());
    int rowBytes = rows.getData().size() / n;
    if (rowBytes * n != rows.getData().size() || rowBytes % size != 0) {
      return null;
    }
    SparseRows.Builder out =
        SparseRows.newBuilder().setName(rows.getName()).setDtype(rows.getDtype());
    ByteBuffer data = ByteBuffer.allocate(rowBytes * n).order(ByteOrder.LITTLE_ENDIAN);
    byte[] row = new byte[rowBytes];
    int kept = 0;
    for (int i = 0; i < n; i++) {
      long id = rows.getRowIds(i);
      if (m.hasRow(hash, id)) {
        rows.getData().copyTo(row, i * rowBytes, 0, rowBytes);
        data.put(row);
        out.addRowIds(id);
        kept++;
      }
    }
    if (kept == 0) {
      return null;
    }
    data.flip();
    return out.setData(ByteString.copyFrom(data)).build();
  }
}
