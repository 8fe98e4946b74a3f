package dev.paramserver.bench.train;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.api.Test;

class TrainSuiteTest {
  @Test
  void selected_withoutNames_runsAllButCtr100mOrTheSoftmaxAloneWhenQuick() {
    assertThat(TrainSuite.selected(null, false)).containsExactly("softmax", "mlp5m", "ctr");
    assertThat(TrainSuite.selected(null, true)).containsExactly("softmax");
  }

  @Test
  void selected_namedWorkloads_runInTheSuitesOrderWhateverTheQuickFlag() {
    assertThat(TrainSuite.selected(List.of("ctr", "softmax"), true))
        .containsExactly("softmax", "ctr");
    assertThat(TrainSuite.selected(List.of("ctr100m", "ctr"), false))
        .containsExactly("ctr", "ctr100m");
  }

  @Test
  void selected_unknownName_failsNamingTheChoices() {
    assertThatThrownBy(() -> TrainSuite.selected(List.of("ctr", "resnet"), false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("'resnet'")
        .hasMessageContaining("softmax,mlp5m,ctr");
  }
}
