package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.trainer.pserver.PserverFailures.Kind;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;

class PserverFailuresTest {
  @Test
  void classify_namesTheFailuresTheTrainerSurvives() {
    assertThat(
            PserverFailures.classify(
                0, "pull from", RpcErrors.toStatus(ErrorReason.NOT_INITIALIZED, "x")))
        .isEqualTo(Kind.LOST_STATE);
    assertThat(
            PserverFailures.classify(
                0, "push to", RpcErrors.toStatus(ErrorReason.SYNC_ABORTED, "x")))
        .isEqualTo(Kind.WITHDRAWN_STEP);
    assertThat(PserverFailures.classify(0, "push to", Status.UNAVAILABLE.asRuntimeException()))
        .isEqualTo(Kind.UNREACHABLE);
    assertThat(
            PserverFailures.classify(0, "pull from", Status.DEADLINE_EXCEEDED.asRuntimeException()))
        .isEqualTo(Kind.UNREACHABLE);
  }

  @Test
  void classify_overloaded_isRetriedAtTheSameAddress_andTooLargeIsNot() {
    assertThat(
            PserverFailures.classify(
                0, "push to", RpcErrors.overloaded("bytes", "x", java.time.Duration.ofMillis(5))))
        .isEqualTo(Kind.OVERLOADED);
    StatusRuntimeException tooLarge = RpcErrors.toStatus(ErrorReason.TOO_LARGE, "x");
    assertThatThrownBy(() -> PserverFailures.classify(0, "push to", tooLarge)).isSameAs(tooLarge);
  }

  @Test
  void classify_throwsTheOthers() {
    StatusRuntimeException bad = RpcErrors.toStatus(ErrorReason.UNKNOWN_PARAMETER, "no fc9.w");
    assertThatThrownBy(() -> PserverFailures.classify(2, "pull from", bad)).isSameAs(bad);
    assertThatThrownBy(
            () -> PserverFailures.classify(2, "push to", new IllegalArgumentException("boom")))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("push to pserver 2 failed");
  }
}
