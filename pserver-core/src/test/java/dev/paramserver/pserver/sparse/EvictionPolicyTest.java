package dev.paramserver.pserver.sparse;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class EvictionPolicyTest {
  private static final long SECOND = 1_000_000_000L;

  @Test
  void lfu_countsUpdates_andHalvesThemEveryHalfLife() {
    EvictionPolicy lfu = EvictionPolicy.lfu(Duration.ofSeconds(10));
    int meta = lfu.created(0);
    for (int i = 0; i < 8; i++) {
      meta = lfu.updated(meta, SECOND);
    }
    assertThat(lfu.score(meta, 2 * SECOND)).isEqualTo(8);
    assertThat(lfu.score(meta, 12 * SECOND)).isEqualTo(4);
    assertThat(lfu.score(meta, 32 * SECOND)).isEqualTo(1);
    assertThat(lfu.score(meta, 400 * SECOND)).isZero();
    // An update after decay continues from the decayed count.
    assertThat(lfu.score(lfu.updated(meta, 12 * SECOND), 12 * SECOND)).isEqualTo(5);
    assertThat(lfu.expired(meta, Long.MAX_VALUE / 2)).isFalse();
  }

  @Test
  void lfu_countSaturatesInsteadOfWrapping() {
    EvictionPolicy lfu = EvictionPolicy.lfu(Duration.ofHours(1));
    int meta = lfu.created(0);
    for (int i = 0; i < 70_000; i++) {
      meta = lfu.updated(meta, 0);
    }
    assertThat(lfu.score(meta, 0)).isEqualTo(0xFFFF);
  }

  @Test
  void ttl_expiresRowsNotUpdatedForTheTtl_andRanksOlderUpdatesLower() {
    EvictionPolicy ttl = EvictionPolicy.ttl(Duration.ofSeconds(30));
    int old = ttl.created(5 * SECOND);
    int recent = ttl.updated(old, 20 * SECOND);
    assertThat(ttl.score(old, 21 * SECOND)).isLessThan(ttl.score(recent, 21 * SECOND));
    assertThat(ttl.expired(old, 34 * SECOND)).isFalse();
    assertThat(ttl.expired(old, 35 * SECOND)).isTrue();
    assertThat(ttl.expired(recent, 35 * SECOND)).isFalse();
  }

  @Test
  void badParameters_areRejectedWithTheirValue() {
    assertThatThrownBy(() -> EvictionPolicy.lfu(Duration.ZERO)).hasMessageContaining("half-life");
    assertThatThrownBy(() -> EvictionPolicy.ttl(Duration.ofMillis(10)))
        .hasMessageContaining("at least 1 s");
  }
}
