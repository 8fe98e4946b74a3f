package dev.paramserver.bench.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DepthRunnerTest {
  @TempDir Path dir;

  @Test
  void keepsExactlyTheDepthInFlight() throws Exception {
    ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    AtomicInteger inFlight = new AtomicInteger();
    AtomicInteger most = new AtomicInteger();
    try {
      LoadRunner.Result r =
          DepthRunner.run(
              () ->
                  c -> {
                    most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                    timer.schedule(
                        () -> {
                          inFlight.decrementAndGet();
                          c.done();
                        },
                        2,
                        TimeUnit.MILLISECONDS);
                  },
              8,
              1000,
              100,
              300);
      assertThat(most.get()).isEqualTo(8);
      assertThat(inFlight.get()).isZero();
      assertThat(r.ops()).isPositive();
      // 8 in flight, about 2 ms each: far more than one operation at a time would do
      assertThat(r.ops() / r.seconds()).isGreaterThan(1000);
      assertThat(r.p50Us()).isGreaterThanOrEqualTo(2000);
    } finally {
      timer.shutdownNow();
    }
  }

  @Test
  void aFailedOperationFailsTheRun() {
    assertThatThrownBy(
            () ->
                DepthRunner.run(
                    () -> c -> c.failed(new IllegalStateException("boom")), 4, 1, 0, 100))
        .hasMessageContaining("boom");
  }

  @Test
  void pipelinesRawAndGrpcEchoesAgainstTheEchoServerProcess() throws Exception {
    try (EchoServerProcess echo = EchoServerProcess.start(List.of("-Xmx256m"), dir)) {
      for (int size : new int[] {4 << 10, 1 << 20}) {
        LoadRunner.Result raw =
            DepthRunner.run(
                () -> new RawPipelineOps(echo.rawPort(), size, false), 8, size, 50, 200);
        assertThat(raw.ops()).as("raw %d", size).isGreaterThanOrEqualTo(5);
        assertThat(raw.gbPerSec()).isPositive();
        LoadRunner.Result oneWay =
            DepthRunner.run(() -> new RawPipelineOps(echo.rawPort(), size, true), 8, size, 50, 200);
        assertThat(oneWay.ops()).as("raw one way %d", size).isGreaterThanOrEqualTo(5);
        try (RawSocketOps closed = new RawSocketOps(echo.rawPort(), size, false)) {
          closed.run();
          closed.run();
        }
        LoadRunner.Result grpc =
            DepthRunner.run(
                () -> new GrpcEchoOps(echo.grpcPort(), EchoProtocol.ECHO, size), 8, size, 50, 200);
        assertThat(grpc.ops()).as("grpc %d", size).isGreaterThanOrEqualTo(5);
      }
    }
  }
}
