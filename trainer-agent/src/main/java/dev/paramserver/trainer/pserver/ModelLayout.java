package dev.paramserver.trainer.pserver;

import dev.paramserver.models.Model;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.tensor.BlockLayout;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import java.util.ArrayList;
import java.util.List;

/**
 * The model's parameters as the pservers see them: specs, blocks and which pserver owns each block.
 * Every trainer computes the same layout from the same model, block size and pserver count.
 */
public final class ModelLayout {
  private final List<ParameterSpec> specs = new ArrayList<>();
  private final List<BlockSpec> blocks = new ArrayList<>();
  private final List<ParameterDef> sparseTables = new ArrayList<>();
  private final ShardPlacement placement;

  /** A layout whose dense parameters and sparse tables use the same optimizer. */
  public ModelLayout(Model model, int blockSize, OptimizerConfig optimizer, int pservers) {
    this(model, blockSize, optimizer, optimizer, pservers);
  }

  /**
   * @param optimizer the update rule of dense parameters
   * @param sparseOptimizer the update rule of sparse tables
   */
  public ModelLayout(
      Model model,
      int blockSize,
      OptimizerConfig optimizer,
      OptimizerConfig sparseOptimizer,
      int pservers) {
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        float stddev = def.init() instanceof ParameterDef.Normal n ? n.stddev() : 0f;
        specs.add(
            ParameterSpec.newBuilder()
                .setName(def.name())
                .addAllShape(def.shape())
                .setDtype(DataType.FLOAT32)
                .setSparse(true)
                .setInitStddev(stddev)
                .setOptimizer(sparseOptimizer)
                .build());
        sparseTables.add(def);
        continue;
      }
      specs.add(
          ParameterSpec.newBuilder()
              .setName(def.name())
              .addAllShape(def.shape())
              .setDtype(DataType.FLOAT32)
              .setBlockSize(blockSize)
              .setOptimizer(optimizer)
              .build());
    }
    // the master's Coordination service places the same blocks from the same specs
    blocks.addAll(BlockLayout.denseBlocks(specs));
    placement = ShardPlacement.place(blocks, pservers);
  }

  public List<ParameterSpec> specs() {
    return specs;
  }

  public ShardPlacement placement() {
    return placement;
  }

  public int pservers() {
    return placement.pservers();
  }

  /** The sparse tables: their rows live on {@code ShardPlacement.ownerOfRow(table, row, N)}. */
  public List<ParameterDef> sparseTables() {
    return sparseTables;
  }

  public int ownerOfRow(String table, long row) {
    return ShardPlacement.ownerOfRow(table, row, placement.pservers());
  }

  /**
   * The distinct ids of {@code ids} (of table {@code table}) by the pserver that owns them: element
   * {@code ps} holds pserver {@code ps}'s ids, ascending (empty when it owns none). Primitive
   * throughout; {@code ids} is not changed.
   */
  public long[][] byOwner(String table, long[] ids) {
    int n = placement.pservers();
    long[] sorted = ids.clone();
    java.util.Arrays.sort(sorted);
    int distinct = 0;
    for (int i = 0; i < sorted.length; i++) {
      if (i == 0 || sorted[i] != sorted[i - 1]) {
        sorted[distinct++] = sorted[i];
      }
    }
    long salt = ShardPlacement.tableHash(table);
    int[] owner = new int[distinct];
    int[] count = new int[n];
    for (int i = 0; i < distinct; i++) {
      owner[i] = n == 1 ? 0 : ShardPlacement.ownerOfRow(salt, sorted[i], n);
      count[owner[i]]++;
    }
    long[][] out = new long[n][];
    for (int ps = 0; ps < n; ps++) {
      out[ps] = new long[count[ps]];
      count[ps] = 0;
    }
    for (int i = 0; i < distinct; i++) {
      out[owner[i]][count[owner[i]]++] = sorted[i];
    }
    return out;
  }

  public List<BlockSpec> blocksOf(int pserver) {
    return placement.blocksOf(pserver);
  }
}
