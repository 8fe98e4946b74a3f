package dev.paramserver.master.coordination;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.BlockPlacement;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.Placement;
import dev.paramserver.proto.v1.SparseTablePlacement;
import dev.paramserver.tensor.BlockLayout;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import java.util.List;

/**
 * The placement of a model's blocks over N pservers: the same code the Java trainers use ({@link
 * BlockLayout#denseBlocks} then {@link ShardPlacement#place}), so every trainer, whatever its
 * language, sends each block to the same pserver.
 */
final class Placements {
  /** More pservers than this is a mistake, not a cluster. */
  static final int MAX_PSERVERS = 4096;

  private Placements() {}

  static Placement of(JobModel model, int pservers) {
    if (pservers <= 0 || pservers > MAX_PSERVERS) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "cannot place blocks over "
              + Integer.toUnsignedString(pservers)
              + " pservers: ask for 1 to "
              + MAX_PSERVERS
              + ", or 0 for the job's ps_desired");
    }
    List<BlockSpec> blocks = BlockLayout.denseBlocks(model.getParametersList());
    ShardPlacement placement = ShardPlacement.place(blocks, pservers);
    Placement.Builder out = Placement.newBuilder().setPservers(pservers);
    for (BlockSpec b : blocks) {
      out.addBlocks(
          BlockPlacement.newBuilder()
              .setName(b.name())
              .setBlock(b.block())
              .setOffset(b.offset())
              .setLength(b.length())
              .setPserver(placement.owner(b.name(), b.block())));
    }
    for (ParameterSpec p : model.getParametersList()) {
      if (p.getSparse()) {
        out.addSparseTables(
            SparseTablePlacement.newBuilder().setName(p.getName()).setWidth((int) p.getShape(1)));
      }
    }
    return out.build();
  }
}
