package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.coordination.EtcdCoordinator;
import dev.paramserver.coordination.EtcdSettings;
import dev.paramserver.models.Initializers;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelFiles;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import dev.paramserver.service.InvalidPropertyException;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.trainer.testing.PserverCluster;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Warm start: the saved values become the initial values, a different model is refused, and
 * pservers that already hold state (restored from a checkpoint) keep it.
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
