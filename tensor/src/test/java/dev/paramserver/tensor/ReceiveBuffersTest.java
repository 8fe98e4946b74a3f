package dev.paramserver.tensor;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ReceiveBuffersTest {
  private final ReceiveBuffers pool = new ReceiveBuffers();

  @Test
  void take_roundsUpToAPowerOfTwoClass_andReusesAnArrayGivenBack() {
    byte[] a = pool.take(100_000);
    assertThat(a).hasSize(128 << 10);
    pool.give(a);
    assertThat(pool.pooled()).isEqualTo(1);

    assertThat(pool.take(70_000)).isSameAs(a);
    assertThat(pool.pooled()).isZero();
    assertThat(pool.take(10)).hasSize(ReceiveBuffers.MIN_BYTES);
  }

  @Test
  void take_largerThanThePooledMaximum_getsAnExactArrayThatIsNotKept() {
    byte[] big = pool.take(ReceiveBuffers.MAX_POOLED_BYTES + 1);
    assertThat(big).hasSize(ReceiveBuffers.MAX_POOLED_BYTES + 1);
    pool.give(big);
    assertThat(pool.pooled()).isZero();
  }

  @Test
  void give_keepsAtMostPerClassArraysOfOneClass() {
    for (int i = 0; i < ReceiveBuffers.PER_CLASS + 3; i++) {
      pool.give(new byte[ReceiveBuffers.MIN_BYTES]);
    }
    assertThat(pool.pooled()).isEqualTo(ReceiveBuffers.PER_CLASS);
    // an array not of a class size (not from take) is never kept
    pool.give(new byte[ReceiveBuffers.MIN_BYTES + 1]);
    assertThat(pool.pooled()).isEqualTo(ReceiveBuffers.PER_CLASS);
  }

  @Test
  void give_keepsAtMostMaxKeptBytesInAll() {
    int largest = ReceiveBuffers.MAX_POOLED_BYTES;
    int fit = (int) (ReceiveBuffers.MAX_KEPT_BYTES / largest);
    for (int i = 0; i < ReceiveBuffers.PER_CLASS; i++) {
      pool.give(new byte[largest]);
    }
    assertThat(pool.pooled()).isEqualTo(fit);
    // taking one makes room for one again
    pool.take(largest);
    pool.give(new byte[largest]);
    pool.give(new byte[largest]);
    assertThat(pool.pooled()).isEqualTo(fit);
  }
}
