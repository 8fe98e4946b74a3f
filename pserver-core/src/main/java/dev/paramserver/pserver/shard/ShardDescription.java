package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ShardStatus;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Describes a {@link ParameterShard} (status, sparse tables, optimizers) under its read lock. */
final class ShardDescription {
  private final ParameterShard shard;
  private volatile long checkpointStep;

  ShardDescription(ParameterShard shard) {
    this.shard = shard;
  }

  /** Records the step of a checkpoint written or loaded, for {@link #status}. */
  void recordCheckpoint(long atStep) {
    checkpointStep = atStep;
  }

  ShardStatus status() {
    shard.structure().readLock().lock();
    try {
      ShardStatus.Builder s =
          ShardStatus.newBuilder()
              .setIndex(Math.max(shard.index(), 0))
              .setInitialised(shard.initialised())
              .setInitId(
                  shard.initialised() && shard.pendingInitId() != null ? shard.pendingInitId() : "")
              .setStep(shard.step())
              .setParameters(shard.parameters().size())
              .setBlocks(shard.blocks().size())
              .setParameterBytes(bytes())
              .setCheckpointStep(checkpointStep)
              .setMode(shard.mode())
              .setPlacementEpoch(shard.gate().rowOwnership().epoch())
              .setMoveInProgress(ShardMoves.describe(shard.gate()));
      shard.blocks().values().stream()
          .sorted(ParameterShard.BLOCK_ORDER)
          .forEach(
              b -> {
                s.addBlockRefs(BlockRef.newBuilder().setName(b.name()).setBlock(b.block));
                s.addBlockBytes(4L * b.values.length);
              });
      return s.build();
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  private long bytes() {
    long n = 0;
    for (DenseBlock b : shard.blocks().values()) {
      n += 4L * b.values.length;
    }
    for (SparseTable t : shard.tables().values()) {
      n += 4L * t.width() * t.rowCount();
    }
    return n;
  }

  List<SparseTableStats> sparseTables() {
    shard.structure().readLock().lock();
    try {
      List<SparseTableStats> out = new ArrayList<>();
      shard.tables().values().stream()
          .sorted(Comparator.comparing(SparseTable::name))
          .forEach(
              t ->
                  out.add(
                      new SparseTableStats(
                          t.name(),
                          t.store.rows(),
                          t.store.bytes(),
                          t.store.evictions(),
                          t.store.admissionsRefused(),
                          t.store.settings().maxRows())));
      return out;
    } finally {
      shard.structure().readLock().unlock();
    }
  }

  Map<String, OptimizerConfig> optimizers() {
    shard.structure().readLock().lock();
    try {
      Map<String, OptimizerConfig> out = new TreeMap<>();
      shard.parameters().forEach((name, p) -> out.put(name, p.spec.getOptimizer()));
      return out;
    } finally {
      shard.structure().readLock().unlock();
    }
  }
}
