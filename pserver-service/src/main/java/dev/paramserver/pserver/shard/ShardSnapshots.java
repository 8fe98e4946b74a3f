package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.UnknownFieldSet;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.rpc.ServiceException;
import dev.paramserver.tensor.TensorCodec;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.function.Consumer;

/** Converts a shard to and from its checkpoint message. */
final class ShardSnapshots {
  // ShardCheckpoint has no fields for the training mode yet: they travel as fields 8 (mode) and
  // 9 (staleness), so that declaring them in checkpoint.proto later reads old files unchanged.
  static final int MODE_FIELD = 8;
  static final int STALENESS_FIELD = 9;

  private ShardSnapshots() {}

  private static UnknownFieldSet modeFields(TrainingMode mode, int staleness) {
    return UnknownFieldSet.newBuilder()
        .addField(
            MODE_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(mode.getNumber()).build())
        .addField(STALENESS_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(staleness).build())
        .build();
  }

  /** Rows per {@link SparseTableCheckpoint} entry: a large table is written as many entries. */
  static final int CHUNK_ROWS = 1 << 14;

  /**
   * The whole checkpoint in memory (small shards, tests). The caller holds the shard's read lock;
   * each block and each table stripe is copied under its own lock.
   */
  static ShardCheckpoint snapshot(ParameterShard shard) {
    ShardCheckpoint.Builder cp = header(shard).toBuilder();
    forEachTableChunk(shard, cp::addSparseTables);
    return cp.build();
  }

  /**
   * Writes the checkpoint to {@code out} without holding it in memory: the header and dense blocks
   * first, then each sparse table as entries of {@value #CHUNK_ROWS} rows (repeated entries of a
   * table are read back as one table, by this and by earlier versions). The caller holds the
   * shard's read lock.
   */
  static long write(ParameterShard shard, OutputStream out) throws IOException {
    ShardCheckpoint header = header(shard);
    header.writeTo(out);
    CodedOutputStream coded = CodedOutputStream.newInstance(out, 1 << 16);
    try {
      forEachTableChunk(
          shard,
          chunk -> {
            try {
              coded.writeMessage(ShardCheckpoint.SPARSE_TABLES_FIELD_NUMBER, chunk);
            } catch (IOException e) {
              throw new UncheckedIOException(e);
            }
          });
    } catch (UncheckedIOException e) {
      throw e.getCause();
    }
    coded.flush();
    return header.getStep();
  }

  /** Everything but the sparse tables' rows. */
  private static ShardCheckpoint header(ParameterShard shard) {
    ShardCheckpoint.Builder cp =
        ShardCheckpoint.newBuilder()
            .setIndex(Math.max(shard.index(), 0))
            .setStep(shard.step())
            .setInitId(shard.initialised() ? shard.pendingInitId() : "")
            .setCreatedMs(System.currentTimeMillis());
    shard.parameters().values().stream()
        .map(p -> p.spec)
        .sorted(Comparator.comparing(ParameterSpec::getName))
        .forEach(cp::addParameters);
    cp.setUnknownFields(modeFields(shard.mode(), shard.staleness()));
    for (DenseBlock b : shard.blocks().values()) {
      BlockCheckpoint.Builder bc =
          BlockCheckpoint.newBuilder().setName(b.name()).setBlock(b.block).setOffset(b.offset);
      synchronized (b) {
        bc.setValues(TensorCodec.encode(b.values)).setUpdates(b.updates);
        for (float[] slot : b.slots) {
          bc.addSlots(TensorCodec.encode(slot));
        }
      }
      cp.addBlocks(bc);
    }
    return cp.build();
  }

  private static void forEachTableChunk(
      ParameterShard shard, Consumer<SparseTableCheckpoint> sink) {
    List<SparseTable> tables = new ArrayList<>(shard.tables().values());
    tables.sort(Comparator.comparing(SparseTable::name));
    for (SparseTable t : tables) {
      boolean[] any = {false};
      t.store.snapshot(
          CHUNK_ROWS,
          c -> {
            any[0] = true;
            sink.accept(chunkOf(t, c));
          });
      if (!any[0]) {
        // An empty table still appears, so that its definition is checked on restore.
        sink.accept(
            SparseTableCheckpoint.newBuilder()
                .setName(t.name())
                .setWidth(t.width())
                .setValues(ByteString.EMPTY)
                .addAllSlots(Collections.nCopies(t.store.slots(), ByteString.EMPTY))
                .build());
      }
    }
  }

  private static SparseTableCheckpoint chunkOf(SparseTable t, SparseRowStore.Chunk c) {
    SparseTableCheckpoint.Builder out =
        SparseTableCheckpoint.newBuilder().setName(t.name()).setWidth(t.width());
    for (int i = 0; i < c.rows(); i++) {
      out.addRowIds(c.ids()[i]).addRowUpdates(c.updates()[i]);
    }
    out.setValues(TensorCodec.encode(c.values()));
    for (float[] s : c.slots()) {
      out.addSlots(TensorCodec.encode(s));
    }
    return out.build();
  }

  /** The caller holds the shard's write lock. */
  static void restore(ParameterShard shard, ShardCheckpoint cp) {
    shard.clear();
    for (ParameterSpec spec : cp.getParametersList()) {
      Parameter p = Parameter.of(spec);
      shard.parameters().put(p.name(), p);
      if (p.sparse()) {
        shard.defineTable(p);
      }
    }
    for (BlockCheckpoint bc : cp.getBlocksList()) {
      Parameter p = shard.parameters().get(bc.getName());
      if (p == null || p.sparse() || bc.getBlock() >= p.blockCount) {
        throw corrupt("block " + bc.getName() + "#" + bc.getBlock() + " has no definition");
      }
      float[] values = floats(bc.getValues(), p.blockLength(bc.getBlock()), bc.getName());
      DenseBlock b = new DenseBlock(p, bc.getBlock(), values);
      if (bc.getSlotsCount() != b.slots.length) {
        throw corrupt("block " + bc.getName() + "#" + bc.getBlock() + " has wrong slot count");
      }
      for (int s = 0; s < b.slots.length; s++) {
        System.arraycopy(
            floats(bc.getSlots(s), values.length, bc.getName()), 0, b.slots[s], 0, values.length);
      }
      b.updates = bc.getUpdates();
      shard.blocks().put(DenseBlock.key(bc.getName(), bc.getBlock()), b);
    }
    for (SparseTableCheckpoint tc : cp.getSparseTablesList()) {
      SparseTable t = shard.tables().get(tc.getName());
      if (t == null || tc.getWidth() != t.width()) {
        throw corrupt("sparse table " + tc.getName() + " has no matching definition");
      }
      int width = t.width();
      int n = tc.getRowIdsCount();
      float[] values = floats(tc.getValues(), n * width, tc.getName());
      int slots = t.parameter.optimizer.slots();
      if (tc.getSlotsCount() != slots || tc.getRowUpdatesCount() != n) {
        throw corrupt("sparse table " + tc.getName() + " has wrong slot or update counts");
      }
      float[][] slotData = new float[slots][];
      for (int s = 0; s < slots; s++) {
        slotData[s] = floats(tc.getSlots(s), n * width, tc.getName());
      }
      float[] rv = new float[width];
      float[][] rs = new float[slots][width];
      for (int i = 0; i < n; i++) {
        System.arraycopy(values, i * width, rv, 0, width);
        for (int s = 0; s < slots; s++) {
          System.arraycopy(slotData[s], i * width, rs[s], 0, width);
        }
        t.store.put(tc.getRowIds(i), rv, rs, tc.getRowUpdates(i));
      }
    }
    UnknownFieldSet extra = cp.getUnknownFields();
    TrainingMode mode =
        extra.hasField(MODE_FIELD)
            ? TrainingMode.forNumber(extra.getField(MODE_FIELD).getVarintList().get(0).intValue())
            : TrainingMode.ASYNC;
    int staleness =
        extra.hasField(STALENESS_FIELD)
            ? extra.getField(STALENESS_FIELD).getVarintList().get(0).intValue()
            : 0;
    shard.setDefinition(cp.getInitId(), mode == null ? TrainingMode.ASYNC : mode, staleness);
    shard.setStep(cp.getStep());
    shard.setInitialised(!cp.getInitId().isEmpty());
  }

  private static float[] floats(ByteString data, int expected, String name) {
    if (data.size() != 4L * expected) {
      throw corrupt(name + " holds " + data.size() + " bytes, expected " + 4L * expected);
    }
    return TensorCodec.decode(data);
  }

  private static ServiceException corrupt(String what) {
    return new ServiceException(ErrorReason.BAD_ARGUMENT, "checkpoint is inconsistent: " + what);
  }
}
