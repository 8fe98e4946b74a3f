package dev.paramserver.serving.replica;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.models.Batch;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.ParameterDef;
import dev.paramserver.models.Parameters;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.DatasetInfo;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.FeatureScaling;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.tensor.TensorCodec;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Predict gives the numbers {@code psctl predict} gives (ModelFiles.read, Loaded.prepare,
 * Model.predict) for a model file holding the same parameters as the served version: the primary's
 * values, written to a file, are the oracle.
 */
class PredictionsTest {
  private static final int FEATURES = 3;
  private static final long[] PUSHED = {1, 5, 9, 12, 40};
  private static final OptimizerConfig SGD =
      OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.SGD).setLearningRate(0.5f).build();
  private static final DatasetInfo SCALED =
      DatasetInfo.newBuilder()
          .setFeatureScaling(
              FeatureScaling.newBuilder()
                  .addMean(0.5f)
                  .addMean(-1f)
                  .addMean(2f)
                  .addScale(2f)
                  .addScale(0.5f)
                  .addScale(1f))
          .build();

  @TempDir Path dir;

  /** Label names c0, c1, ... and the feature scaling. */
  private static DatasetInfo data(int classes) {
    DatasetInfo.Builder b = SCALED.toBuilder();
    for (int k = 0; k < classes; k++) {
      b.addLabelNames("c" + k);
    }
    return b.build();
  }

  private final SplittableRandom random = new SplittableRandom(7);

  @Test
  void sparseLr_predictsAsPsctlPredictDoesOnAFileOfTheSameVersion() throws IOException {
    checkAgainstModelFile(
        new ModelSpec("sparse-lr", FEATURES, 2, List.of(), Mlp.Activation.RELU, 4));
  }

  @Test
  void mlp_predictsAsPsctlPredictDoesOnAFileOfTheSameVersion() throws IOException {
    checkAgainstModelFile(new ModelSpec("mlp", FEATURES, 3, List.of(5), Mlp.Activation.TANH, 0));
  }

  @Test
  void softmax_predictsAsPsctlPredictDoesOnAFileOfTheSameVersion() throws IOException {
    checkAgainstModelFile(ModelSpec.softmax(FEATURES, 4));
  }

  private void checkAgainstModelFile(ModelSpec spec) throws IOException {
    Model model = ModelFactory.create(spec);
    ParameterShard primary = new ParameterShard(true);
    Parameters expectedValues = Parameters.zerosLike(model);
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder().setTrainerId("t0").setInitId("i1");
    for (ParameterDef def : model.parameters()) {
      ParameterSpec.Builder p =
          ParameterSpec.newBuilder()
              .setName(def.name())
              .setDtype(DataType.FLOAT32)
              .setSparse(def.sparse())
              .setOptimizer(SGD);
      if (def.sparse()) {
        p.addShape(1000).addShape(def.shape().get(1)).setInitStddev(0.1f);
      } else {
        def.shape().forEach(p::addShape);
        float[] values = expectedValues.dense(def.name());
        for (int i = 0; i < values.length; i++) {
          values[i] = (float) random.nextGaussian();
        }
        p.setBlockSize(values.length);
        init.addBlocks(
            TensorBlock.newBuilder()
                .setName(def.name())
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(values)));
      }
      init.addParameters(p);
    }
    primary.init(init.build());
    primary.finishInit(
        FinishInitRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId("i1")
            .setExpectedBlocks(init.getBlocksCount())
            .build());
    for (ParameterDef def : model.parameters()) {
      if (def.sparse()) {
        int width = Math.toIntExact(def.shape().get(1));
        float[] g = new float[PUSHED.length * width];
        for (int i = 0; i < g.length; i++) {
          g[i] = (float) random.nextGaussian();
        }
        SparseRows.Builder rows =
            SparseRows.newBuilder()
                .setName(def.name())
                .setDtype(DataType.FLOAT32)
                .setData(TensorCodec.encode(g));
        for (long id : PUSHED) {
          rows.addRowIds(id);
        }
        primary.push(
            PushGradientsRequest.newBuilder().setTrainerId("t0").addSparseGradients(rows).build());
        // the oracle: the primary's rows, as an export pulls them
        float[] pulled = new float[PUSHED.length * width];
        SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(def.name());
        for (long id : PUSHED) {
          ref.addRowIds(id);
        }
        TensorCodec.decode(
            primary
                .pull(PullParametersRequest.newBuilder().addSparseRows(ref).build())
                .getSparseRows(0)
                .getData(),
            DataType.FLOAT32,
            pulled,
            0);
        for (int i = 0; i < PUSHED.length; i++) {
          float[] row = new float[width];
          System.arraycopy(pulled, i * width, row, 0, width);
          expectedValues.sparse(def.name()).put(PUSHED[i], row);
        }
      }
    }
    ServedModel served = new ServedModel("r", 1);
    served.install(0, 3, primary.snapshot());
    Predictions predictions = new Predictions(served, () -> description(spec), 256);

    // ids the tables hold and ids they do not (read as zeros, as a file without them)
    List<Example> examples = new ArrayList<>();
    for (int i = 0; i < 40; i++) {
      Example.Builder e = Example.newBuilder().setLabel(i % 2);
      for (int j = 0; j < FEATURES; j++) {
        e.addDense((float) random.nextGaussian() * 3);
      }
      e.addSparseIds(PUSHED[i % PUSHED.length]).addSparseIds(100 + i);
      examples.add(e.build());
    }
    Path file = dir.resolve(spec.type() + ".model");
    ModelFiles.write(file, spec, model, expectedValues, "job", data(spec.classes()));
    ModelFiles.Loaded oracle = ModelFiles.read(file);
    Batch b = Batch.of(examples, spec.features());
    oracle.prepare(b);
    float[] expected = oracle.model().predict(oracle.parameters(), b);

    Predictions.Answer got =
        predictions.predict(examples, ServedVersion.Minimum.ANY, Duration.ZERO);
    assertThat(got.probabilities()).containsExactly(expected);
    assertThat(got.classes()).isEqualTo(spec.classes());
    assertThat(got.version().shards().get(0).sequence()).isEqualTo(primary.step());
    assertThat(got.predicted()).hasSize(examples.size());
    for (int i = 0; i < examples.size(); i++) {
      int best = 0;
      for (int k = 1; k < spec.classes(); k++) {
        if (expected[i * spec.classes() + k] > expected[i * spec.classes() + best]) {
          best = k;
        }
      }
      assertThat(got.predicted()[i]).as("example %d", i).isEqualTo(best);
    }

    assertThatThrownBy(
            () ->
                predictions.predict(
                    List.of(Example.newBuilder().addDense(1f).build()),
                    ServedVersion.Minimum.ANY,
                    Duration.ZERO))
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.BAD_ARGUMENT))
        .hasMessageContaining("1 dense features, the model expects 3");
    List<Example> tooMany = new ArrayList<>();
    for (int i = 0; i < 257; i++) {
      tooMany.add(examples.get(0));
    }
    assertThatThrownBy(() -> predictions.predict(tooMany, ServedVersion.Minimum.ANY, Duration.ZERO))
        .isInstanceOfSatisfying(
            ServiceException.class, e -> assertThat(e.reason()).isEqualTo(ErrorReason.TOO_LARGE))
        .hasMessageContaining("at most 256 examples");
  }

  private static ModelFiles.Loaded description(ModelSpec spec) {
    try {
      return ModelFiles.read(
          new ByteArrayInputStream(
              ModelFiles.description(spec, "job", data(spec.classes())).toByteArray()),
          "description");
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }
}
