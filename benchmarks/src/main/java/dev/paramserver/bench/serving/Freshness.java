package dev.paramserver.bench.serving;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.rpc.Channels;
import dev.paramserver.tensor.TensorCodec;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Freshness of a serving replica: a push of one row of the job's {@code wide} table (an id the
 * training data never uses) is acknowledged by the pserver with its shard's sequence; a lookup of
 * that row asking for that sequence ({@code min_version}) is answered once the replica serves a
 * version holding the push. The time from the acknowledgement to that answer is the freshness (with
 * one lookup's round trip in it: an upper bound).
 */
final class Freshness {
  private static final String TABLE = "wide";
  private static final long FRESH_IDS = 5_000_000_000_000L;

  private Freshness() {}

  record Result(double[] ms) {
    int samples() {
      return ms.length;
    }

    double percentileMs(double p) {
      return OpenLoop.percentile(ms, p);
    }

    double maxMs() {
      return Arrays.stream(ms).max().orElse(Double.NaN);
    }
  }

  /** Waits until the replica serves {@code table} (the trainer initialised it). */
  static void awaitTable(ManagedChannel serving, String table, int width, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    var stub = ServingGrpc.newBlockingStub(serving);
    while (true) {
      try {
        stub.withDeadlineAfter(10, TimeUnit.SECONDS)
            .lookup(LookupRequest.newBuilder().setTable(table).setWidth(width).addIds(1).build());
        return;
      } catch (StatusRuntimeException e) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException(
              "the serving replica serves no table '" + table + "' after " + timeout, e);
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(200));
      }
    }
  }

  /** {@code samples} pushes, one every {@code interval}, each followed by its lookup. */
  static Result measure(String pserver, ManagedChannel serving, int samples, Duration interval) {
    ManagedChannel ps = Channels.forAddress(pserver);
    try {
      var push = ParameterServerGrpc.newBlockingStub(ps);
      var lookup = ServingGrpc.newBlockingStub(serving);
      double[] ms = new double[samples];
      long start = System.nanoTime();
      for (int k = 0; k < samples; k++) {
        long planned = start + k * interval.toNanos();
        for (long w = planned - System.nanoTime(); w > 0; w = planned - System.nanoTime()) {
          LockSupport.parkNanos(w);
        }
        long id = FRESH_IDS + k;
        long acked =
            push.withDeadlineAfter(30, TimeUnit.SECONDS)
                .pushGradients(
                    PushGradientsRequest.newBuilder()
                        .setTrainerId("bench-freshness")
                        .setSession("bench-freshness")
                        .setStep(k + 1)
                        .addSparseGradients(
                            SparseRows.newBuilder()
                                .setName(TABLE)
                                .setDtype(DataType.FLOAT32)
                                .setData(TensorCodec.encode(new float[] {1f}))
                                .addRowIds(id))
                        .build())
                .getStep();
        long t0 = System.nanoTime();
        var r =
            lookup
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .lookup(
                    LookupRequest.newBuilder()
                        .setTable(TABLE)
                        .addIds(id)
                        .setMinVersion(
                            MinVersion.newBuilder()
                                .setWaitMs(20_000)
                                .addShards(
                                    ShardPosition.newBuilder().setIndex(0).setSequence(acked)))
                        .build());
        ms[k] = (System.nanoTime() - t0) / 1e6;
        if (r.getDefaultedCount() != 0) {
          throw new IllegalStateException(
              "row " + id + " pushed at sequence " + acked + " not served at " + r.getVersion());
        }
      }
      return new Result(ms);
    } finally {
      Channels.close(ps);
    }
  }
}
