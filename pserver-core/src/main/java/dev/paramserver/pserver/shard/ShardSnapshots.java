package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import com.google.protobuf.CodedOutputStream;
import com.google.protobuf.UnknownFieldSet;
import dev.paramserver.proto.v1.BlockCheckpoint;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.sparse.SparseRowStore;
import dev.paramserver.pserver.sparse.TableSketch;
import dev.paramserver.tensor.TensorCodec;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** Converts a shard to and from its checkpoint message. */
final class ShardSnapshots {
  private static final org.slf4j.Logger log =
      org.slf4j.LoggerFactory.getLogger(ShardSnapshots.class);

  // ShardCheckpoint has no fields for the training mode yet: they travel as fields 8 (mode) and
  // 9 (staleness), so that declaring them in checkpoint.proto later reads old files unchanged.
  static final int MODE_FIELD = 8;
  static final int STALENESS_FIELD = 9;

  private ShardSnapshots() {}

  static UnknownFieldSet modeFields(TrainingMode mode, int staleness) {
    return UnknownFieldSet.newBuilder()
        .addField(
            MODE_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(mode.getNumber()).build())
        .addField(STALENESS_FIELD, UnknownFieldSet.Field.newBuilder().addVarint(staleness).build())
        .build();
  }

  /**
   * The checkpoint format written ({@code ShardCheckpoint.format_version}): 2 adds each table's
   * admission sketch; files without a version (0) are read as before, with empty sketches. 3 keeps
   * the applied pushes as a window ({@code AppliedPushes.complete_through, open_steps}); earlier
   * files are read as their highest step with the parts of it.
   */
  static final int FORMAT_VERSION = 3;

  /** Rows per {@link SparseTableCheckpoint} entry: a large table is written as many entries. */
  static final int CHUNK_ROWS = 1 << 14;

  /**
   * The whole checkpoint in memory (small shards, tests). The caller holds the shard's read lock;
   * each block and each table stripe is copied under its own lock.
   */
  static ShardCheckpoint snapshot(ParameterShard shard) {
    ShardCheckpoint.Builder cp = header(shard, 0).toBuilder();
    forEachTableChunk(shard, cp::addSparseTables);
    return cp.build();
  }

  /**
   * Writes the checkpoint to {@code out} without holding it in memory: the header and dense blocks
   * first, then each sparse table as entries of {@value #CHUNK_ROWS} rows (repeated entries of a
   * table are read back as one table, by this and by earlier versions). The caller holds the
   * shard's read lock.
   */
  static long write(ParameterShard shard, OutputStream out, long walSegment) throws IOException {
    ShardCheckpoint header = header(shard, walSegment);
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
  private static ShardCheckpoint header(ParameterShard shard, long walSegment) {
    ShardCheckpoint.Builder cp =
        ShardCheckpoint.newBuilder()
            .setIndex(Math.max(shard.index(), 0))
            .setStep(shard.step())
            .setWalSegment(walSegment)
            .setFormatVersion(FORMAT_VERSION)
            .addAllApplied(shard.pushes.applied().toProto())
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
      TableSketch sketch = t.store.sketch();
      t.store.snapshot(
          CHUNK_ROWS,
          c -> {
            SparseTableCheckpoint entry = chunkOf(t, c);
            sink.accept(any[0] ? entry : withSketch(entry, sketch));
            any[0] = true;
          });
      if (!any[0]) {
        // An empty table still appears, so that its definition is checked on restore.
        sink.accept(
            withSketch(
                SparseTableCheckpoint.newBuilder()
                    .setName(t.name())
                    .setWidth(t.width())
                    .setValues(ByteString.EMPTY)
                    .addAllSlots(Collections.nCopies(t.store.slots(), ByteString.EMPTY))
                    .build(),
                sketch));
      }
    }
  }

  /** The table's first entry carries its admission sketch (format version 2). */
  private static SparseTableCheckpoint withSketch(SparseTableCheckpoint entry, TableSketch sketch) {
    if (sketch == null) {
      return entry;
    }
    SparseTableCheckpoint.Builder b = entry.toBuilder();
    for (byte[] c : sketch.counters()) {
      b.addAdmissionSketch(ByteString.copyFrom(c));
    }
    for (long n : sketch.increments()) {
      b.addAdmissionIncrements(n);
    }
    return b.build();
  }

  static SparseTableCheckpoint chunkOf(SparseTable t, SparseRowStore.Chunk c) {
    SparseTableCheckpoint.Builder out =
        SparseTableCheckpoint.newBuilder().setName(t.name()).setWidth(t.width());
    for (int i = 0; i < c.rows(); i++) {
      out.addRowIds(c.ids()[i]).addRowUpdates(c.updates()[i]);
    }
    out.setValues(TensorCodec.encode(c.values()));
    for (float[] s : c.slots()) {
      out.addSlots(TensorCodec.encode(s));
    }
    for (int i = 0; i < c.rows(); i++) {
      out.addRowEvictionScores(c.scores()[i]);
    }
    if (c.rows() > 0) {
      out.setEvictionPolicy(t.store.settings().policy().name());
    }
    return out.build();
  }

  /**
   * Replaces the shard's content with {@code header} (every field but the table rows) and the
   * {@code staged} tables (whose rows were restored already). The caller holds the write lock.
   */
  static void install(
      ParameterShard shard, ShardCheckpoint header, Map<String, SparseTable> staged) {
    shard.clear();
    for (ParameterSpec spec : header.getParametersList()) {
      SparseTable table = staged.get(spec.getName());
      Parameter p = table != null ? table.parameter : Parameter.of(spec);
      if (table != null && !p.spec.equals(spec)) {
        throw ShardRestore.corrupt("sparse table " + spec.getName() + " is defined twice");
      }
      shard.parameters().put(p.name(), p);
      if (p.sparse()) {
        shard.installTable(table != null ? table : shard.newTable(p));
      }
    }
    for (String name : staged.keySet()) {
      if (!shard.tables().containsKey(name)) {
        throw ShardRestore.corrupt("sparse table " + name + " has no definition");
      }
    }
    for (BlockCheckpoint bc : header.getBlocksList()) {
      Parameter p = shard.parameters().get(bc.getName());
      if (p == null || p.sparse() || bc.getBlock() >= p.blockCount) {
        throw ShardRestore.corrupt(
            "block " + bc.getName() + "#" + bc.getBlock() + " has no definition");
      }
      shard.blocks().put(DenseBlock.key(bc.getName(), bc.getBlock()), block(p, bc));
    }
    shard.setDefinition(header.getInitId(), modeOf(header), stalenessOf(header));
    shard.pushes.step().set(header.getStep());
    shard.pushes.applied().restore(header.getAppliedList(), header.getFormatVersion());
    shard.setInitialised(!header.getInitId().isEmpty());
  }

  /** The dense block a checkpoint entry describes, of parameter {@code p}. */
  static DenseBlock block(Parameter p, BlockCheckpoint bc) {
    float[] values =
        ShardRestore.floats(bc.getValues(), p.blockLength(bc.getBlock()), bc.getName());
    DenseBlock b = new DenseBlock(p, bc.getBlock(), values);
    if (bc.getSlotsCount() != b.slots.length) {
      throw ShardRestore.corrupt(
          "block " + bc.getName() + "#" + bc.getBlock() + " has wrong slot count");
    }
    for (int s = 0; s < b.slots.length; s++) {
      System.arraycopy(
          ShardRestore.floats(bc.getSlots(s), values.length, bc.getName()),
          0,
          b.slots[s],
          0,
          values.length);
    }
    b.updates = bc.getUpdates();
    return b;
  }

  /** The training mode a checkpoint records (fields 8 and 9 kept as unknown fields). */
  static TrainingMode modeOf(ShardCheckpoint header) {
    UnknownFieldSet extra = header.getUnknownFields();
    TrainingMode mode =
        extra.hasField(MODE_FIELD)
            ? TrainingMode.forNumber(extra.getField(MODE_FIELD).getVarintList().get(0).intValue())
            : TrainingMode.ASYNC;
    return mode == null ? TrainingMode.ASYNC : mode;
  }

  static int stalenessOf(ShardCheckpoint header) {
    UnknownFieldSet extra = header.getUnknownFields();
    return extra.hasField(STALENESS_FIELD)
        ? extra.getField(STALENESS_FIELD).getVarintList().get(0).intValue()
        : 0;
  }

  /** A snapshot under the read lock. */
  static ShardCheckpoint snapshotLocked(ParameterShard shard) {
    shard.structure().readLock().lock();
    try {
      return snapshot(shard);
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  /** See {@link ParameterShard#writeCopy}: a copy cut under the write lock. */
  static boolean writeCopy(ParameterShard shard, OutputStream out, Runnable atCut)
      throws IOException {
    shard.structure().writeLock().lock();
    try {
      if (!shard.initialised()) {
        atCut.run();
        return false;
      }
      write(shard, out, 0);
      atCut.run();
      return true;
    } finally {
      shard.structure().writeLock().unlock();
    }
  }

  /** See {@link ParameterShard#writeCheckpoint}. */
  static long writeCheckpoint(ParameterShard shard, OutputStream out, PushLog log)
      throws IOException {
    if (log.enabled()) {
      // With a write-ahead log the checkpoint must be a cut: every push logged before the cut is
      // in it, none after. Pushes wait while it is written.
      shard.structure().writeLock().lock();
      try {
        return write(shard, out, log.cut());
      } finally {
        shard.structure().writeLock().unlock();
      }
    }
    shard.structure().readLock().lock();
    try {
      return write(shard, out, 0);
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  /** Installs a restore under the write lock: see {@link ShardRestore#install}. */
  static void installLocked(
      ParameterShard shard, ShardCheckpoint header, Map<String, SparseTable> staged) {
    shard.structure().writeLock().lock();
    try {
      install(shard, header, staged);
      shard.recordCheckpoint(header.getStep());
      log.info(
          "restored {} blocks, {} sparse tables ({} rows) of init '{}' at step {}",
          shard.blocks().size(),
          shard.tables().size(),
          shard.tables().values().stream().mapToLong(SparseTable::rowCount).sum(),
          shard.pendingInitId(),
          header.getStep());
    } finally {
      shard.structure().writeLock().unlock();
    }
  }
}
