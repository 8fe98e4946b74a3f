package dev.paramserver.serving.snapshot;

import dev.paramserver.models.ModelFiles;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.NamedTensor;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseTable;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.serving.replica.Snapshot;
import dev.paramserver.serving.replica.SnapshotSource;
import dev.paramserver.storage.Storage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Optional;

/**
 * A saved model file (as {@code psctl} and run-local write it; local or {@code s3://}) served
 * without a job: one shard holding every dense parameter whole and every sparse row the file has. A
 * sparse id the file has no row for reads as zeros (the file records no initialiser).
 */
public final class ModelFileSnapshot implements SnapshotSource {
  private final Storage storage;
  private final String location;

  public ModelFileSnapshot(Storage storage, String location) {
    this.storage = storage;
    this.location = location;
  }

  /** The model file at {@code location}, read whole. */
  public static ModelFiles.Loaded load(Storage storage, String location) {
    try {
      return ModelFiles.read(storage, location);
    } catch (IOException e) {
      throw new UncheckedIOException("model file " + location + " cannot be read", e);
    }
  }

  @Override
  public Optional<Snapshot> latest(int shards) {
    if (shards != 1) {
      throw new IllegalArgumentException("a model file is served as 1 shard, not " + shards);
    }
    ModelFile file = load(storage, location).file();
    return Optional.of(new Snapshot("model file " + location, 0, List.of(shardOf(file))));
  }

  @Override
  public Snapshot checkpoint(long id, int shards) {
    throw new IllegalStateException(
        "this replica serves the model file " + location + ", which has no checkpoints");
  }

  // Nothing is trained here, but a parameter is defined with an update rule.
  private static final OptimizerConfig UNUSED =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(1f).build();

  /** One shard holding {@code file}'s parameters, initialised as a trainer's warm start does. */
  static ParameterShard shardOf(ModelFile file) {
    String initId = "model-file-" + Long.toHexString(file.getCreatedMs());
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder().setTrainerId("serving").setInitId(initId);
    for (NamedTensor t : file.getParametersList()) {
      long n = 1;
      for (long d : t.getShapeList()) {
        n *= d;
      }
      init.addParameters(
          ParameterSpec.newBuilder()
              .setName(t.getName())
              .addAllShape(t.getShapeList())
              .setDtype(DataType.FLOAT32)
              .setOptimizer(UNUSED)
              .setBlockSize(Math.toIntExact(Math.max(1, n))));
      init.addBlocks(
          TensorBlock.newBuilder()
              .setName(t.getName())
              .setBlock(0)
              .setOffset(0)
              .setDtype(DataType.FLOAT32)
              .setData(t.getData()));
    }
    for (SparseTable t : file.getSparseTablesList()) {
      init.addParameters(
          ParameterSpec.newBuilder()
              .setName(t.getName())
              .addShape(0)
              .addShape(t.getWidth())
              .setDtype(DataType.FLOAT32)
              .setOptimizer(UNUSED)
              .setSparse(true));
      init.addSparseRows(
          SparseRows.newBuilder()
              .setName(t.getName())
              .addAllRowIds(t.getRowIdsList())
              .setDtype(DataType.FLOAT32)
              .setData(t.getData()));
    }
    ParameterShard shard = new ParameterShard(false);
    int blocks = shard.init(init.build());
    shard.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("serving")
            .setInitId(initId)
            .setExpectedBlocks(blocks)
            .build());
    return shard;
  }
}
