package dev.paramserver.bench.serving;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.SettableFuture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class OpenLoopTest {
  @Test
  void percentile_isTheNearestRank() {
    double[] v = new double[100];
    for (int i = 0; i < 100; i++) {
      v[i] = 100 - i; // unsorted: 100 .. 1
    }
    assertThat(OpenLoop.percentile(v, 50)).isEqualTo(50);
    assertThat(OpenLoop.percentile(v, 99)).isEqualTo(99);
    assertThat(OpenLoop.percentile(v, 100)).isEqualTo(100);
    assertThat(OpenLoop.percentile(new double[] {7}, 99)).isEqualTo(7);
    assertThat(OpenLoop.percentile(new double[0], 50)).isNaN();
  }

  @Test
  void run_sendsAtTheRate_countsFailuresAndUnansweredCallsAsErrors() throws Exception {
    List<SettableFuture<Object>> never = new ArrayList<>();
    OpenLoop.Result r =
        OpenLoop.run(
            200,
            Duration.ofMillis(500),
            Duration.ofMillis(200),
            i -> {
              if (i % 10 == 0) {
                return Futures.immediateFailedFuture(new IllegalStateException("refused"));
              }
              if (i % 10 == 1) {
                SettableFuture<Object> f = SettableFuture.create();
                never.add(f);
                return f; // never answered
              }
              return Futures.immediateFuture(i);
            });
    assertThat(never).hasSize(10);
    assertThat(r.errors()).isEqualTo(20);
    assertThat(r.latenciesMs()).hasSize(80);
    assertThat(r.offeredPerSecond()).isEqualTo(200);
    // 100 calls planned over 0.5 s: the run lasts that long, however fast the answers are
    assertThat(r.seconds()).isGreaterThanOrEqualTo(0.49);
  }
}
