package dev.paramserver.pserver.shard;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.PushGradientsRequest;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class AppliedStepsPruningTest {
  private final AtomicLong clock = new AtomicLong();
  private final AppliedSteps steps = new AppliedSteps(clock::get);

  private static PushGradientsRequest push(String trainer, long step) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId(trainer)
        .setSession("s1")
        .setStep(step)
        .build();
  }

  private void applyNew(PushGradientsRequest request) {
    AppliedSteps.Run run = steps.run(request);
    synchronized (run) {
      assertThat(run.applied(request.getStep(), request.getPart())).isFalse();
      run.record(request);
    }
  }

  @Test
  void idleRun_pastTheWindow_isDropped_andItsResendRefused_neverApplied() {
    steps.configure(Duration.ofSeconds(60), 1000);
    applyNew(push("t1", 1));
    applyNew(push("t1", 2));
    clock.addAndGet(Duration.ofSeconds(61).toNanos());
    applyNew(push("t2", 1)); // a new identity prunes

    assertThat(steps.runCount()).isEqualTo(1);
    // a resend of step 2 of the dropped run may have been applied: refused, with a clear message
    assertThatThrownBy(() -> steps.run(push("t1", 2)).applied(2, 0))
        .isInstanceOf(ServiceException.class)
        .satisfies(
            e ->
                assertThat(((ServiceException) e).reason())
                    .isEqualTo(ErrorReason.PUSH_WINDOW_EXCEEDED))
        .hasMessageContaining("applied-window");
    // a later step of that trainer starts a new record
    applyNew(push("t1", 3));
    AppliedSteps.Run again = steps.run(push("t1", 3));
    synchronized (again) {
      assertThat(again.applied(3, 0)).isTrue();
    }
  }

  @Test
  void runsPastTheCount_dropTheIdlestFirst() {
    steps.configure(Duration.ofHours(1), 2);
    applyNew(push("a", 1));
    clock.addAndGet(1_000);
    applyNew(push("b", 1));
    clock.addAndGet(1_000);
    applyNew(push("c", 1));

    assertThat(steps.runCount()).isEqualTo(2);
    assertThat(steps.applied(push("b", 1))).isTrue();
    assertThat(steps.applied(push("c", 1))).isTrue();
    assertThatThrownBy(() -> steps.run(push("a", 1)).applied(1, 0))
        .isInstanceOf(ServiceException.class);
  }

  @Test
  void activeRun_withinTheWindow_isKept() {
    steps.configure(Duration.ofSeconds(60), 1000);
    for (int i = 1; i <= 10; i++) {
      applyNew(push("t1", i));
      clock.addAndGet(Duration.ofSeconds(30).toNanos());
      applyNew(push("other" + i, 1));
    }
    assertThat(steps.applied(push("t1", 10))).isTrue();
    // t1 and the others created in the last 60 s
    assertThat(steps.runCount()).isLessThanOrEqualTo(4);
  }
}
