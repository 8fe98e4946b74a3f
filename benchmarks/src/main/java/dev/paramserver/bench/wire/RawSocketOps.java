package dev.paramserver.bench.wire;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

/**
 * The raw socket baseline, closed loop: one {@link RawPipelineOps} request at a time, {@code size}
 * bytes to the echo server and the same bytes back (or, one way, a tiny ack). The reader thread
 * takes the echo while this one writes, so both directions stream at once.
 */
final class RawSocketOps implements Op {
  private final RawPipelineOps pipe;

  RawSocketOps(int port, int size, boolean oneWay) throws IOException {
    pipe = new RawPipelineOps(port, size, oneWay);
  }

  @Override
  public void run() throws Exception {
    CompletableFuture<Void> f = new CompletableFuture<>();
    pipe.start(
        new AsyncOp.Completion() {
          @Override
          public void done() {
            f.complete(null);
          }

          @Override
          public void failed(Throwable t) {
            f.completeExceptionally(t);
          }
        });
    try {
      f.get();
    } catch (ExecutionException e) {
      throw e.getCause() instanceof Exception x ? x : e;
    }
  }

  @Override
  public void close() {
    pipe.close();
  }
}
