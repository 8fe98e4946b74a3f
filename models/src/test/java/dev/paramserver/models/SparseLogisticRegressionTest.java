package dev.paramserver.models;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.Example;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

class SparseLogisticRegressionTest {

  private static Batch batch(int n, int features, long seed) {
    Random r = new Random(seed);
    List<Example> ex = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Example.Builder b = Example.newBuilder().setLabel(r.nextInt(2));
      for (int j = 0; j < features; j++) {
        b.addDense((float) r.nextGaussian());
      }
      for (int k = 0; k < 4; k++) {
        b.addSparseIds(r.nextInt(6)).addSparseValues((float) (0.5 + r.nextDouble()));
      }
      ex.add(b.build());
    }
    return Batch.of(ex, features);
  }

  private static Parameters randomParams(SparseLogisticRegression m, Batch b, long seed) {
    Random r = new Random(seed);
    Parameters p = Initializers.initial(m, seed);
    for (String name : p.denseNames()) {
      float[] v = p.dense(name);
      for (int i = 0; i < v.length; i++) {
        v[i] += (float) (0.3 * r.nextGaussian());
      }
    }
    for (String t : p.sparseNames()) {
      Parameters.SparseTable table = p.sparse(t);
      for (long id : b.sparseIds()) {
        float[] row = table.row(id);
        for (int d = 0; d < row.length; d++) {
          row[d] = (float) (0.3 * r.nextGaussian());
        }
      }
    }
    return p;
  }

  private static double loss(Model m, Parameters p, Batch b) {
    return m.trainStep(p, b, Parameters.zerosLike(m)).loss();
  }

  @Test
  void gradients_matchFiniteDifferences_denseAndSparse() {
    SparseLogisticRegression m = new SparseLogisticRegression(3, 4);
    Batch b = batch(9, 3, 1);
    Parameters p = randomParams(m, b, 2);
    Parameters g = Parameters.zerosLike(m);
    m.trainStep(p, b, g);
    double eps = 1e-2;
    int checked = 0;
    for (String name : p.denseNames()) {
      float[] v = p.dense(name);
      for (int i = 0; i < v.length; i++) {
        float orig = v[i];
        v[i] = (float) (orig + eps);
        double up = loss(m, p, b);
        v[i] = (float) (orig - eps);
        double down = loss(m, p, b);
        v[i] = orig;
        assertThat(g.dense(name)[i])
            .as("d loss / d %s[%d]", name, i)
            .isCloseTo((float) ((up - down) / (2 * eps)), Offset.offset(2e-3f));
        checked++;
      }
    }
    for (String t : p.sparseNames()) {
      for (long id : p.sparse(t).ids()) {
        float[] v = p.sparse(t).rowOrNull(id);
        for (int d = 0; d < v.length; d++) {
          float orig = v[d];
          v[d] = (float) (orig + eps);
          double up = loss(m, p, b);
          v[d] = (float) (orig - eps);
          double down = loss(m, p, b);
          v[d] = orig;
          float[] grow = g.sparse(t).rowOrNull(id);
          assertThat(grow).as("gradient row %s[%d]", t, id).isNotNull();
          assertThat(grow[d])
              .as("d loss / d %s[%d][%d]", t, id, d)
              .isCloseTo((float) ((up - down) / (2 * eps)), Offset.offset(2e-3f));
          checked++;
        }
      }
    }
    assertThat(checked).isGreaterThan(20);
  }

  @Test
  void gradients_touchOnlyTheRowsOfTheBatch() {
    SparseLogisticRegression m = new SparseLogisticRegression(0, 2);
    Batch b = batch(5, 0, 3);
    Parameters g = Parameters.zerosLike(m);
    m.trainStep(randomParams(m, b, 4), b, g);
    long[] ids = java.util.Arrays.stream(b.sparseIds()).distinct().sorted().toArray();
    assertThat(g.sparse(SparseLogisticRegression.WIDE).sortedIds()).isEqualTo(ids);
    assertThat(g.sparse(SparseLogisticRegression.EMB).sortedIds()).isEqualTo(ids);
  }

  @Test
  void trainStepByBatchIndex_givesTheTableFormsLossAndGradients_bitForBit() {
    SparseLogisticRegression m = new SparseLogisticRegression(3, 4);
    Batch b = batch(17, 3, 5);
    Parameters p = randomParams(m, b, 6);
    p.sparse(SparseLogisticRegression.EMB).remove(b.sparseIds()[0]); // unknown rows read as zeros
    Parameters tableGrads = Parameters.zerosLike(m);
    Model.StepResult byTable = m.trainStep(p, b, tableGrads);

    // resolve: distinct ids in order of first occurrence, each occurrence's index
    long[] ids = b.sparseIds();
    long[] distinct = new long[ids.length];
    int[] local = new int[ids.length];
    int count = 0;
    for (int k = 0; k < ids.length; k++) {
      int at = 0;
      while (at < count && distinct[at] != ids[k]) {
        at++;
      }
      if (at == count) {
        distinct[count++] = ids[k];
      }
      local[k] = at;
    }
    BatchRows rows =
        new BatchRows(
            List.of(SparseLogisticRegression.WIDE, SparseLogisticRegression.EMB), new int[] {1, 4});
    rows.reset(distinct, count, local);
    for (int t = 0; t < rows.tables(); t++) {
      for (int k = 0; k < count; k++) {
        rows.table(t).values()[k] = p.sparse(rows.table(t).name()).rowOrNull(distinct[k]);
      }
    }
    Parameters flatGrads = Parameters.zerosLike(m);
    Model.StepResult byIndex = m.trainStep(p, b, rows, flatGrads);

    assertThat(byIndex).isEqualTo(byTable);
    for (String name : tableGrads.denseNames()) {
      assertThat(flatGrads.dense(name)).isEqualTo(tableGrads.dense(name));
    }
    assertThat(flatGrads.sparse(SparseLogisticRegression.WIDE).isEmpty()).isTrue();
    for (int t = 0; t < rows.tables(); t++) {
      BatchRows.Table table = rows.table(t);
      for (int k = 0; k < count; k++) {
        float[] want = tableGrads.sparse(table.name()).rowOrNull(distinct[k]);
        float[] got =
            java.util.Arrays.copyOfRange(table.grads(), k * table.width(), (k + 1) * table.width());
        assertThat(got).isEqualTo(want);
      }
    }
  }

  @Test
  void trainStepByBatchIndex_onAModelWithoutSparseTables_trainsAsTheTableForm() {
    Model softmax = ModelFactory.create(ModelSpec.softmax(3, 2));
    Batch b = batch(8, 3, 7);
    Parameters p = Initializers.initial(softmax, 8);
    Parameters byTable = Parameters.zerosLike(softmax);
    Parameters byIndex = Parameters.zerosLike(softmax);
    BatchRows none = new BatchRows(List.of(), new int[0]);

    assertThat(softmax.trainStep(p, b, none, byIndex)).isEqualTo(softmax.trainStep(p, b, byTable));
    for (String name : byTable.denseNames()) {
      assertThat(byIndex.dense(name)).isEqualTo(byTable.dense(name));
    }
  }
}
