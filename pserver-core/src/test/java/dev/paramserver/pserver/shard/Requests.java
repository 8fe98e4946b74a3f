package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;

/** Builders of requests for tests. */
public final class Requests {
  private Requests() {}

  public static OptimizerConfig sgd(float lr) {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.SGD)
        .setLearningRate(lr)
        .build();
  }

  public static ParameterSpec dense(String name, int elements, int blockSize, OptimizerConfig opt) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(elements)
        .setDtype(DataType.FLOAT32)
        .setBlockSize(blockSize)
        .setOptimizer(opt)
        .build();
  }

  public static TensorBlock block(String name, int block, int blockSize, float... values) {
    return TensorBlock.newBuilder()
        .setName(name)
        .setBlock(block)
        .setOffset((long) block * blockSize)
        .setDtype(DataType.FLOAT32)
        .setData(TensorCodec.encode(values))
        .build();
  }

  public static TensorBlock gradient(String name, int block, float... values) {
    return TensorBlock.newBuilder()
        .setName(name)
        .setBlock(block)
        .setDtype(DataType.FLOAT32)
        .setData(TensorCodec.encode(values))
        .build();
  }

  public static InitParametersRequest init(
      String initId, List<ParameterSpec> specs, List<TensorBlock> blocks) {
    return InitParametersRequest.newBuilder()
        .setTrainerId("t0")
        .setInitId(initId)
        .addAllParameters(specs)
        .addAllBlocks(blocks)
        .build();
  }

  public static FinishInitRequest finish(String initId, int expected) {
    return FinishInitRequest.newBuilder()
        .setTrainerId("t0")
        .setInitId(initId)
        .setExpectedBlocks(expected)
        .build();
  }

  public static PushGradientsRequest push(TensorBlock... gradients) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t0")
        .addAllGradients(List.of(gradients))
        .build();
  }

  public static PullParametersRequest pull(String name, int block) {
    return PullParametersRequest.newBuilder()
        .addBlocks(BlockRef.newBuilder().setName(name).setBlock(block))
        .build();
  }

  public static PullParametersRequest pullAll() {
    return PullParametersRequest.getDefaultInstance();
  }
}
