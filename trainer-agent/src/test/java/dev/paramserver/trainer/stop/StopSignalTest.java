package dev.paramserver.trainer.stop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.rpc.StoppedException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class StopSignalTest {
  private final StopSignal stop = new StopSignal();

  @Test
  void request_makesChecksAndRetriesGiveUp() {
    stop.check("nothing yet");
    stop.request();
    assertThat(stop.isRequested()).isTrue();
    assertThatThrownBy(() -> stop.check("asking for a task"))
        .isInstanceOf(StoppedException.class)
        .hasMessageContaining("asking for a task");
    assertThatThrownBy(
            () -> stop.retryUpTo(Duration.ofMillis(10)).until("pulling", n -> Optional.empty()))
        .isInstanceOf(StoppedException.class);
  }

  @Test
  void pauseAndAwait_turnAnInterruptIntoStopped() {
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> stop.pause(1000, "waiting")).isInstanceOf(StoppedException.class);
    assertThat(Thread.interrupted()).isTrue();
    Thread.currentThread().interrupt();
    assertThatThrownBy(() -> stop.await(new CompletableFuture<>(), "a push"))
        .isInstanceOf(StoppedException.class);
    assertThat(Thread.interrupted()).isTrue();
  }

  @Test
  void await_rethrowsTheFailure() {
    assertThat(stop.await(CompletableFuture.completedFuture(5), "x")).isEqualTo(5);
    assertThatThrownBy(
            () -> stop.await(CompletableFuture.failedFuture(new IllegalStateException("bad")), "x"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("bad");
  }
}
