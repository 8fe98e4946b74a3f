package dev.paramserver.master.coordination;

import static dev.paramserver.master.coordination.Models.dense;
import static dev.paramserver.master.coordination.Models.sparse;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.TrainingMode;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/** The first difference between a trainer's model and the job's, in words. */
class ModelDiffTest {
  private static final JobModel JOB = JobModel.newBuilder().addAllParameters(Models.mlp()).build();

  private static JobModel with(UnaryOperator<List<ParameterSpec>> change) {
    return JOB.toBuilder()
        .clearParameters()
        .addAllParameters(change.apply(new ArrayList<>(Models.mlp())))
        .build();
  }

  private static String diff(JobModel here) {
    return ModelDiff.first(here, JOB).orElseThrow();
  }

  @Test
  void sameModel_inAnotherOrder_hasNoDifference() {
    assertThat(ModelDiff.first(JOB, JOB)).isEmpty();
    assertThat(
            ModelDiff.first(
                with(
                    l -> {
                      Collections.reverse(l);
                      return l;
                    }),
                JOB))
        .isEmpty();
  }

  @Test
  void shape_namesParameterAndBothShapes() {
    assertThat(diff(with(l -> set(l, 0, dense("fc1.w", 4096, 784, 64)))))
        .isEqualTo("parameter 'fc1.w': shape [784, 64] here, [784, 128] in the job");
  }

  @Test
  void missingAndExtraParameters_nameTheParameterAndTheCounts() {
    assertThat(diff(with(l -> remove(l, 3))))
        .isEqualTo("parameter 'fc2.b' is missing (the job has 5 parameters, this trainer 4)");
    List<ParameterSpec> more = new ArrayList<>(Models.mlp());
    more.add(dense("fc3.w", 4096, 10, 10));
    assertThat(diff(JobModel.newBuilder().addAllParameters(more).build()))
        .isEqualTo(
            "parameter 'fc3.w' is not in the job's model (the job has 5 parameters, this trainer"
                + " 6)");
  }

  @Test
  void optimizerSparseBlockSizeAndDtype_eachNamed() {
    OptimizerConfig adam =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.ADAM)
            .setLearningRate(0.01f)
            .build();
    assertThat(diff(with(l -> set(l, 1, l.get(1).toBuilder().setOptimizer(adam).build()))))
        .startsWith("parameter 'fc1.b': optimizer {kind: ADAM learning_rate: 0.01} here, {")
        .endsWith("} in the job");
    assertThat(diff(with(l -> set(l, 4, dense("emb", 4096, 10, 16)))))
        .isEqualTo("parameter 'emb': dense here, sparse in the job");
    assertThat(diff(with(l -> set(l, 2, l.get(2).toBuilder().setBlockSize(512).build()))))
        .isEqualTo("parameter 'fc2.w': block_size 512 here, 4096 in the job");
    assertThat(diff(with(l -> set(l, 3, l.get(3).toBuilder().setDtype(DataType.FLOAT16).build()))))
        .isEqualTo("parameter 'fc2.b': dtype FLOAT16 here, FLOAT32 in the job");
    assertThat(diff(with(l -> set(l, 4, sparse("emb", 16).toBuilder().setInitStddev(1).build()))))
        .isEqualTo("parameter 'emb': init_stddev 1.0 here, 0.0 in the job");
  }

  @Test
  void modeAndStaleness_comeAfterTheParameters() {
    assertThat(diff(JOB.toBuilder().setMode(TrainingMode.SYNC).build()))
        .isEqualTo("mode SYNC here, ASYNC in the job");
    assertThat(
            diff(
                JOB.toBuilder()
                    .setMode(TrainingMode.SYNC)
                    .clearParameters()
                    .addAllParameters(remove(new ArrayList<>(Models.mlp()), 0))
                    .build()))
        .as("a parameter difference comes first")
        .startsWith("parameter 'fc1.w' is missing");
    assertThat(diff(JOB.toBuilder().setStaleness(3).build()))
        .isEqualTo("staleness 3 here, 0 in the job");
  }

  @Test
  void blockSizeZero_meansTheDefault() {
    JobModel job =
        JobModel.newBuilder().addParameters(dense("w", 256 * 1024, 10).toBuilder().build()).build();
    JobModel here = JobModel.newBuilder().addParameters(dense("w", 0, 10)).build();
    assertThat(ModelDiff.first(here, job)).isEmpty();
  }

  private static List<ParameterSpec> set(List<ParameterSpec> l, int i, ParameterSpec p) {
    l.set(i, p);
    return l;
  }

  private static List<ParameterSpec> remove(List<ParameterSpec> l, int i) {
    l.remove(i);
    return l;
  }
}
