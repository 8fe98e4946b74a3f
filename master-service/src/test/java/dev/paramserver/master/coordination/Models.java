package dev.paramserver.master.coordination;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import java.util.List;

/** Parameter specs for the tests: a small MLP with an embedding table. */
final class Models {
  private Models() {}

  static ParameterSpec dense(String name, int blockSize, long... shape) {
    ParameterSpec.Builder b =
        ParameterSpec.newBuilder()
            .setName(name)
            .setDtype(DataType.FLOAT32)
            .setBlockSize(blockSize)
            .setOptimizer(sgd(0.1f));
    for (long d : shape) {
      b.addShape(d);
    }
    return b.build();
  }

  static ParameterSpec sparse(String name, int width) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .setDtype(DataType.FLOAT32)
        .addShape(0)
        .addShape(width)
        .setSparse(true)
        .setOptimizer(sgd(0.1f))
        .build();
  }

  static OptimizerConfig sgd(float lr) {
    return OptimizerConfig.newBuilder().setLearningRate(lr).build();
  }

  /** fc1.w [784, 128], fc1.b, fc2.w [128, 10], fc2.b, emb (sparse, width 16). */
  static List<ParameterSpec> mlp() {
    return List.of(
        dense("fc1.w", 4096, 784, 128),
        dense("fc1.b", 4096, 128),
        dense("fc2.w", 4096, 128, 10),
        dense("fc2.b", 4096, 10),
        sparse("emb", 16));
  }
}
