package dev.paramserver.trainer.pserver;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.rpc.Backoff;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MovedPacingTest {
  private final MovedPacing pacing =
      new MovedPacing(new Backoff(Duration.ofMillis(1), Duration.ofMillis(2)));

  @Test
  void aChainOfMoves_eachNamingANewerEpoch_isResentWithoutAPause() {
    for (long epoch = 13; epoch <= 18; epoch++) {
      assertThat(pacing.refusedAgain(new Moved(2, 0, epoch))).as("epoch %d", epoch).isFalse();
    }
  }

  @Test
  void theSameEpochAgain_orAnOlderOne_pausesFirst() {
    assertThat(pacing.refusedAgain(new Moved(0, 2, 5))).isFalse();
    assertThat(pacing.refusedAgain(new Moved(0, 2, 5))).isTrue();
    assertThat(pacing.refusedAgain(new Moved(0, 2, 4))).isTrue();
    assertThat(pacing.refusedAgain(new Moved(0, 2, 6))).isFalse();
  }

  @Test
  void refusalsNamingNoEpoch_pauseFromTheSecondOn() {
    assertThat(pacing.refusedAgain(new Moved(1, -1, 0))).isFalse();
    assertThat(pacing.refusedAgain(new Moved(1, -1, 0))).isTrue();
    assertThat(pacing.refusedAgain(new Moved(1, -1, 0))).isTrue();
  }
}
