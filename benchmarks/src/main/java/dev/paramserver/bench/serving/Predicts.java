package dev.paramserver.bench.serving;

import dev.paramserver.proto.v1.Example;
import dev.paramserver.proto.v1.PredictRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.serving.replica.Predictions;
import dev.paramserver.serving.replica.ServedVersion;
import io.grpc.ManagedChannel;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Predictions of {@code n} examples, one call after the other on one thread (closed loop) for a
 * while: from the replica process over gRPC, or on the in-JVM replica ({@link Predictions}).
 */
final class Predicts {
  private Predicts() {}

  /** {@code batches} sent as Predict calls to the replica at {@code ch} for {@code duration}. */
  static OpenLoop.Result overGrpc(
      ManagedChannel ch, List<List<Example>> batches, Duration duration) {
    var stub = ServingGrpc.newBlockingStub(ch);
    PredictRequest[] requests =
        batches.stream()
            .map(b -> PredictRequest.newBuilder().addAllExamples(b).build())
            .toArray(PredictRequest[]::new);
    return closedLoop(
        duration,
        i -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).predict(requests[i % requests.length]));
  }

  /** The same predictions on {@code predictions}, in this JVM. */
  static OpenLoop.Result inJvm(
      Predictions predictions, List<List<Example>> batches, Duration duration) {
    return closedLoop(
        duration,
        i ->
            predictions.predict(
                batches.get(i % batches.size()), ServedVersion.Minimum.ANY, Duration.ZERO));
  }

  /**
   * Calls {@code call} with 0, 1, 2, ... one after the other on this thread for {@code duration}:
   * each call's latency, and a failure (a runtime exception) counted as an error.
   */
  static OpenLoop.Result closedLoop(Duration duration, Consumer<Integer> call) {
    double[] latencies = new double[1 << 12];
    int n = 0;
    long errors = 0;
    long start = System.nanoTime();
    long end = start + duration.toNanos();
    for (long now = start; now < end; ) {
      try {
        call.accept(n);
      } catch (RuntimeException e) {
        errors++;
      }
      long after = System.nanoTime();
      if (n == latencies.length) {
        latencies = Arrays.copyOf(latencies, n * 2);
      }
      latencies[n++] = (after - now) / 1e6;
      now = after;
    }
    return new OpenLoop.Result(
        Arrays.copyOf(latencies, n), errors, (System.nanoTime() - start) / 1e9, 0);
  }
}
