package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Mlp;
import dev.paramserver.models.Model;
import dev.paramserver.models.ModelFactory;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.models.Parameters;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class GradientsTest {
  private final Model model =
      ModelFactory.create(new ModelSpec("sparse-lr", 2, 2, List.of(), Mlp.Activation.RELU, 2));

  @Test
  void addThenScale_isTheMean_denseAndSparse() {
    Parameters a = Parameters.zerosLike(model);
    Parameters b = Parameters.zerosLike(model);
    String dense = a.denseNames().iterator().next();
    String table = a.sparseNames().iterator().next();
    Arrays.fill(a.dense(dense), 1f);
    Arrays.fill(b.dense(dense), 3f);
    b.sparse(table).row(7)[0] = 4f;

    Gradients.add(a, b);
    Gradients.scale(a, 0.5f);

    assertThat(a.dense(dense)).containsOnly(2f);
    assertThat(a.sparse(table).row(7)[0]).isEqualTo(2f);
  }

  @Test
  void copyDense_copiesEveryDenseValue() {
    Parameters a = Parameters.zerosLike(model);
    Parameters b = Parameters.zerosLike(model);
    String dense = a.denseNames().iterator().next();
    Arrays.fill(a.dense(dense), 5f);
    Gradients.copyDense(a, b);
    assertThat(b.dense(dense)).containsOnly(5f);
  }
}
