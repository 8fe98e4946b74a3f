package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnknownFieldSet;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.ServiceException;
import dev.paramserver.tensor.TensorCodec;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;

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

  /** The caller holds the shard's read lock; each block is copied under its own lock. */
  static ShardCheckpoint snapshot(ParameterShard shard) {
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
    for (SparseTable t : shard.tables().values()) {
      cp.addSparseTables(snapshotTable(t));
    }
    return cp.build();
  }

  private static SparseTableCheckpoint snapshotTable(SparseTable t) {
    int width = t.width();
    int slots = t.parameter.optimizer.slots();
    Map<Long, SparseTable.Row> rows = t.rows();
    long[] ids = rows.keySet().stream().mapToLong(Long::longValue).sorted().toArray();
    float[] values = new float[ids.length * width];
    float[][] slotData = new float[slots][ids.length * width];
    SparseTableCheckpoint.Builder out =
        SparseTableCheckpoint.newBuilder().setName(t.name()).setWidth(width);
    for (int i = 0; i < ids.length; i++) {
      SparseTable.Row row = rows.get(ids[i]);
      synchronized (row) {
        System.arraycopy(row.values, 0, values, i * width, width);
        for (int s = 0; s < slots; s++) {
          System.arraycopy(row.slots[s], 0, slotData[s], i * width, width);
        }
        out.addRowUpdates(row.updates);
      }
      out.addRowIds(ids[i]);
    }
    out.setValues(TensorCodec.encode(values));
    for (float[] s : slotData) {
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
        shard.tables().put(p.name(), new SparseTable(p));
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
      for (int i = 0; i < n; i++) {
        float[] rv = Arrays.copyOfRange(values, i * width, (i + 1) * width);
        float[][] rs = new float[slots][];
        for (int s = 0; s < slots; s++) {
          rs[s] = Arrays.copyOfRange(slotData[s], i * width, (i + 1) * width);
        }
        t.putRow(tc.getRowIds(i), new SparseTable.Row(rv, rs, tc.getRowUpdates(i)));
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
