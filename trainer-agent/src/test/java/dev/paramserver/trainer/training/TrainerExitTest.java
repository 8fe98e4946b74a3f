package dev.paramserver.trainer.training;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.trainer.testing.TestProperties;
import org.junit.jupiter.api.Test;
import org.springframework.context.support.GenericApplicationContext;

class TrainerExitTest {
  @Test
  void exit_withExitWhenDoneOff_leavesTheContextRunning() {
    try (GenericApplicationContext context = new GenericApplicationContext()) {
      context.refresh();
      // the test properties set exit-when-done=false, as a trainer embedded in a test would
      new TrainerExit(
              TestProperties.of("/d/*.rio", null, true, null), context, (since, max) -> false)
          .exit(0);
      assertThat(context.isActive()).isTrue();
    }
  }
}
