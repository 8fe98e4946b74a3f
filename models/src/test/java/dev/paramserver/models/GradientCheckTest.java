package dev.paramserver.models;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.Example;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class GradientCheckTest {

  private static Batch randomBatch(int n, int features, int classes, long seed) {
    Random r = new Random(seed);
    List<Example> ex = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Example.Builder b = Example.newBuilder().setLabel(r.nextInt(classes));
      for (int j = 0; j < features; j++) {
        b.addDense((float) r.nextGaussian());
      }
      ex.add(b.build());
    }
    return Batch.of(ex, features);
  }

  /** Mean loss with the current parameters (computed through trainStep into scratch gradients). */
  private static double loss(Model m, Parameters p, Batch b) {
    return m.trainStep(p, b, Parameters.zerosLike(m)).loss();
  }

  private static void checkGradients(Model m, long seed) {
    Parameters p = Initializers.initial(m, seed);
    // perturb the zero-initialised parameters so the check is not at a symmetric point
    Random r = new Random(seed);
    for (String name : p.denseNames()) {
      float[] v = p.dense(name);
      for (int i = 0; i < v.length; i++) {
        v[i] += (float) (0.1 * r.nextGaussian());
      }
    }
    Batch b = randomBatch(7, m.features(), m.classes(), seed + 1);
    Parameters g = Parameters.zerosLike(m);
    m.trainStep(p, b, g);
    double eps = 1e-2;
    int checked = 0;
    for (String name : p.denseNames()) {
      float[] v = p.dense(name);
      float[] gv = g.dense(name);
      for (int i = 0; i < v.length; i += Math.max(1, v.length / 13)) {
        float orig = v[i];
        v[i] = (float) (orig + eps);
        double up = loss(m, p, b);
        v[i] = (float) (orig - eps);
        double down = loss(m, p, b);
        v[i] = orig;
        double numeric = (up - down) / (2 * eps);
        assertThat(gv[i])
            .as("d loss / d %s[%d]", name, i)
            .isCloseTo(
                (float) numeric,
                org.assertj.core.data.Offset.offset(2e-3f + 2e-2f * (float) Math.abs(numeric)));
        checked++;
      }
    }
    assertThat(checked).isGreaterThan(5);
  }

  @Test
  void softmaxGradients_matchFiniteDifferences() {
    checkGradients(Mlp.softmax(5, 4), 1);
  }

  @Test
  void mlpReluGradients_matchFiniteDifferences() {
    checkGradients(new Mlp("mlp", 6, 3, List.of(8, 5), Mlp.Activation.RELU), 2);
  }

  @Test
  void mlpTanhGradients_matchFiniteDifferences() {
    checkGradients(new Mlp("mlp", 4, 3, List.of(6), Mlp.Activation.TANH), 3);
  }

  @Test
  void softmaxTrainedWithPlainSgd_separatesGaussianClasses() {
    int features = 8;
    int classes = 3;
    Random r = new Random(5);
    float[][] means = new float[classes][features];
    for (float[] m : means) {
      for (int j = 0; j < features; j++) {
        m[j] = (float) (2 * r.nextGaussian());
      }
    }
    List<Example> ex = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      int y = r.nextInt(classes);
      Example.Builder b = Example.newBuilder().setLabel(y);
      for (int j = 0; j < features; j++) {
        b.addDense((float) (means[y][j] + r.nextGaussian()));
      }
      ex.add(b.build());
    }
    Dataset data = new Dataset(ex, features);
    Model m = Mlp.softmax(features, classes);
    Parameters p = Initializers.initial(m, 7);
    Parameters g = Parameters.zerosLike(m);
    for (int epoch = 0; epoch < 3; epoch++) {
      for (Batch b : data.batches(32)) {
        g.clear();
        m.trainStep(p, b, g);
        for (String name : p.denseNames()) {
          float[] w = p.dense(name);
          float[] gw = g.dense(name);
          for (int i = 0; i < w.length; i++) {
            w[i] -= 0.1f * gw[i];
          }
        }
      }
    }
    Evaluation e = Evaluation.of(m, p, data, 100);
    assertThat(e.accuracy()).isGreaterThan(0.95);
    assertThat(e.samples()).isEqualTo(3000);
  }

  @Test
  void auc_ofPerfectAndReversedRankings() {
    assertThat(Evaluation.auc(new float[] {0.1f, 0.2f, 0.8f, 0.9f}, new int[] {0, 0, 1, 1}))
        .isEqualTo(1.0);
    assertThat(Evaluation.auc(new float[] {0.9f, 0.8f, 0.2f, 0.1f}, new int[] {0, 0, 1, 1}))
        .isEqualTo(0.0);
    assertThat(Evaluation.auc(new float[] {0.5f, 0.5f}, new int[] {0, 1})).isEqualTo(0.5);
  }

  @Test
  void modelFile_roundTripsParametersAndSpec(
      @org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
    ModelSpec spec = new ModelSpec("mlp", 4, 3, List.of(5), Mlp.Activation.TANH, 0);
    Model m = ModelFactory.create(spec);
    Parameters p = Initializers.initial(m, 9);
    java.nio.file.Path file = dir.resolve("model.pb");
    ModelFiles.write(file, spec, m, p, "job1");
    ModelFiles.Loaded back = ModelFiles.read(file);
    assertThat(back.spec()).isEqualTo(spec);
    for (String name : p.denseNames()) {
      assertThat(back.parameters().dense(name)).containsExactly(p.dense(name));
    }
  }

  @Test
  void modelFile_garbageIsAClearError(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir)
      throws Exception {
    java.nio.file.Path file = dir.resolve("bad.pb");
    java.nio.file.Files.write(file, new byte[] {(byte) 0xff, 1, 2, 3});
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> ModelFiles.read(file))
        .isInstanceOf(java.io.IOException.class)
        .hasMessageContaining("not a paramserver model file");
  }
}
