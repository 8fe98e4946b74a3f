package dev.paramserver.bench.component;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.bench.train.CtrData;
import dev.paramserver.models.Mlp;
import dev.paramserver.models.ModelSpec;
import dev.paramserver.proto.v1.Example;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The trainer component benchmark's harness trains real batches against the in-process pserver. */
@Timeout(60)
class TrainerThreadBenchTest {
  @Test
  void harnessAndSingleJvm_trainTheSameBatches() throws Exception {
    ModelSpec spec = new ModelSpec("sparse-lr", 0, 2, List.of(), Mlp.Activation.RELU, 8);
    List<Example> examples = new CtrData(10_000_000L).examples(1024, 1);
    List<List<Example>> tasks = List.of(examples.subList(0, 512), examples.subList(512, 1024));
    try (TrainerThreadBench.Harness h =
        new TrainerThreadBench.Harness(spec, TrainerThreadBench.properties())) {
      assertThat(h.pass(tasks, 1)).isEqualTo(4);
      assertThat(h.pass(tasks, 2)).isEqualTo(4);
    }
    assertThat(new TrainerThreadBench.Single(spec, 42).pass(tasks, 1)).isEqualTo(4);
  }
}
