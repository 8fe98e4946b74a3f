package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class RetryTest {
  private final AtomicBoolean stop = new AtomicBoolean();
  private final Retry retry = new Retry(Duration.ofMillis(5), Duration.ofMillis(20), stop::get);

  @Test
  void until_retriesEmptyAttempts_thenReturnsTheResult() {
    List<Integer> attempts = new ArrayList<>();
    String result =
        retry.until(
            "test",
            n -> {
              attempts.add(n);
              return n < 4 ? Optional.empty() : Optional.of("done");
            });
    assertThat(result).isEqualTo("done");
    assertThat(attempts).containsExactly(1, 2, 3, 4);
  }

  @Test
  void until_waitsBetweenAttempts_growingUpToTheMaximum() {
    long start = System.nanoTime();
    retry.until("test", n -> n < 6 ? Optional.empty() : Optional.of(n));
    long elapsedMs = (System.nanoTime() - start) / 1_000_000;
    // waits of about 5, 10, 20, 20, 20 ms less up to 20% jitter: at least 60 ms in all
    assertThat(elapsedMs).isGreaterThanOrEqualTo(60);
  }

  @Test
  void until_stopCondition_throwsStoppedNamingTheOperation() {
    assertThatThrownBy(
            () ->
                retry.until(
                    "pulling parameters",
                    n -> {
                      if (n == 3) {
                        stop.set(true);
                      }
                      return Optional.empty();
                    }))
        .isInstanceOf(StoppedException.class)
        .hasMessageContaining("gave up pulling parameters");
  }

  @Test
  void until_interrupted_throwsStoppedAndKeepsTheInterruptFlag() {
    try {
      assertThatThrownBy(
              () ->
                  retry.until(
                      "waiting",
                      n -> {
                        Thread.currentThread().interrupt();
                        return Optional.empty();
                      }))
          .isInstanceOf(StoppedException.class);
      assertThat(Thread.currentThread().isInterrupted()).isTrue();
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void until_attemptThrows_endsTheLoop() {
    assertThatThrownBy(
            () ->
                retry.until(
                    "x",
                    n -> {
                      throw new IllegalStateException("not retryable");
                    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("not retryable");
  }

  @Test
  void constructor_rejectsWaitsOutOfOrder() {
    assertThatThrownBy(() -> new Retry(Duration.ofSeconds(2), Duration.ofSeconds(1), () -> false))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("initial <= max");
  }
}
