package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.models.SparseLogisticRegression;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.service.InvalidPropertyException;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.pserver.ModelLayout;
import dev.paramserver.trainer.pserver.RequestPlanner;
import dev.paramserver.trainer.testing.PserverCluster;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm start: the saved values become the initial values (the rows of sparse tables go to the
 * pservers that own them), a different model is refused, and pservers that already hold state
 * (restored from a checkpoint) keep it.
 */
@Timeout(60)
class WarmStartTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  @TempDir Path dir;

  private Path save(Mlp model, float value) throws Exception {
    Parameters p = Parameters.zerosLike(model);
    for (String name : p.denseNames()) {
      Arrays.fill(p.dense(name), value);
    }
    Path file = dir.resolve("model-" + value + ".pb");
    ModelFiles.write(file, ModelSpec.softmax(model.features(), model.classes()), model, p, "saved");
    return file;
  }

  @Test
  void savedValues_replaceTheRandomOnes() throws Exception {
    Mlp model = Mlp.softmax(3, 2);
    Path file = save(model, 0.25f);
    Parameters values =
        WarmStart.values(
            null, file.toString(), model, ModelSpec.softmax(3, 2), Initializers.initial(model, 1));
    for (String name : values.denseNames()) {
      assertThat(values.dense(name)).containsOnly(0.25f);
    }
  }

  @Test
  void sparseTables_savedRowsReachTheirOwningPservers_exactlyOnce_inRequestsUnderTheSizeLimit()
      throws Exception {
    ModelSpec spec = new ModelSpec("sparse-lr", 2, 2, List.of(), Mlp.Activation.RELU, 4);
    Model model = ModelFactory.create(spec);
    Parameters saved = Parameters.zerosLike(model);
    Arrays.fill(saved.dense(SparseLogisticRegression.BIAS), 0.5f);
    // Enough embedding rows (200000 x 4 floats, 3.2 MB) that one pserver's rows need several
    // requests.
    Random r = new Random(3);
    for (long id = 0; id < 200_000; id++) {
      long rowId = id * 7919 + 11;
      saved.sparse(SparseLogisticRegression.WIDE).put(rowId, new float[] {r.nextFloat()});
      saved
          .sparse(SparseLogisticRegression.EMB)
          .put(rowId, new float[] {r.nextFloat(), r.nextFloat(), r.nextFloat(), -id});
    }
    Path file = dir.resolve("sparse.pb");
    ModelFiles.write(file, spec, model, saved, "saved");
    WarmStart.check(file.toString(), "sparse-lr");

    Parameters values =
        WarmStart.values(null, file.toString(), model, spec, Initializers.initial(model, 1));
    assertThat(values.dense(SparseLogisticRegression.BIAS)).containsExactly(0.5f);

    int pservers = 3;
    RequestPlanner planner =
        new RequestPlanner(
            new ModelLayout(model, 1024, OptimizerConfig.getDefaultInstance(), pservers),
            "t0",
            DataType.FLOAT32,
            false);
    Map<String, Map<Long, float[]>> sent = new HashMap<>();
    for (int ps = 0; ps < pservers; ps++) {
      List<InitParametersRequest> requests = planner.inits(ps, values, "init");
      assertThat(requests.stream().filter(q -> q.getSparseRowsCount() > 0).count())
          .as("requests carrying rows to pserver %d", ps)
          .isGreaterThan(1);
      for (InitParametersRequest q : requests) {
        long payload =
            q.getBlocksList().stream().mapToLong(b -> b.getData().size()).sum()
                + q.getSparseRowsList().stream()
                    .mapToLong(rows -> rows.getData().size() + 10L * rows.getRowIdsCount())
                    .sum();
        assertThat(payload).isLessThanOrEqualTo(RequestPlanner.MAX_REQUEST_BYTES);
        for (SparseRows rows : q.getSparseRowsList()) {
          assertThat(rows.getDtype()).isEqualTo(DataType.FLOAT32);
          float[] data = TensorCodec.decode(rows.getData());
          int width = data.length / rows.getRowIdsCount();
          for (int i = 0; i < rows.getRowIdsCount(); i++) {
            long id = rows.getRowIds(i);
            assertThat(planner.layout().ownerOfRow(rows.getName(), id)).isEqualTo(ps);
            float[] row = Arrays.copyOfRange(data, i * width, (i + 1) * width);
            assertThat(sent.computeIfAbsent(rows.getName(), k -> new HashMap<>()).put(id, row))
                .as("row %d of %s sent once", id, rows.getName())
                .isNull();
          }
        }
      }
    }
    for (String table : List.of(SparseLogisticRegression.WIDE, SparseLogisticRegression.EMB)) {
      Parameters.SparseTable expected = saved.sparse(table);
      assertThat(sent.get(table)).as(table).hasSize(expected.size());
      expected.forEach((id, row) -> assertThat(sent.get(table).get(id)).containsExactly(row));
    }
  }

  @Test
  void aDifferentModel_isRefusedNamingTheProperty() throws Exception {
    Path file = save(Mlp.softmax(3, 2), 1f);
    Mlp other = Mlp.softmax(4, 2);
    assertThatThrownBy(
            () ->
                WarmStart.values(
                    null,
                    file.toString(),
                    other,
                    ModelSpec.softmax(4, 2),
                    Initializers.initial(other, 1)))
        .isInstanceOf(InvalidPropertyException.class)
        .hasMessageStartingWith("paramserver.trainer.init-from: " + file + " holds a softmax model")
        .hasMessageContaining("this job trains a softmax model with 4 features");
    assertThatThrownBy(() -> WarmStart.check(file.toString(), "mlp"))
        .hasMessage(
            "paramserver.trainer.init-from: "
                + file
                + " holds a softmax model but paramserver.trainer.model is mlp: train the same"
                + " model type");
  }

  @Test
  void initialisedPservers_keepTheirState_overWarmStartValues() throws Exception {
    try (EtcdCoordinator coordinator =
        EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()))) {
      PserverCluster cluster = new PserverCluster(coordinator, 2, 2, false);
      try {
        Parameters restored = Initializers.initial(cluster.model, 42);
        cluster.initializer.ensureAll(restored); // the state a checkpoint would have brought back
        Parameters warm = Parameters.zerosLike(cluster.model);
        for (String name : warm.denseNames()) {
          Arrays.fill(warm.dense(name), 9f);
        }
        cluster.initializer.ensureAll(warm); // a trainer of the restarted job, with init-from
        Parameters pulled = Parameters.zerosLike(cluster.model);
        cluster.client.pull(pulled);
        for (String name : pulled.denseNames()) {
          assertThat(pulled.dense(name)).as(name).isEqualTo(restored.dense(name));
        }
      } finally {
        cluster.close();
      }
    }
  }
}
