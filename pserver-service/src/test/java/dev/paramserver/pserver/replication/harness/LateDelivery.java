package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.FillChunk;
import dev.paramserver.proto.v1.FillResponse;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.ShardReplicationGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Calls a harness pserver's ShardReplication service directly, as a network delivers late what it
 * held ({@link FaultyNetwork#holdNext}).
 */
final class LateDelivery {
  private LateDelivery() {}

  /**
   * Delivers {@code request} to {@code to}'s ShardReplication service now, as a network delivers a
   * request it held (see {@link FaultyNetwork#holdNext}).
   *
   * @throws io.grpc.StatusRuntimeException when the service refuses it
   */
  static ReplicateResponse replicate(InProcessPserver to, ReplicateRequest request) {
    ManagedChannel ch = InProcessChannelBuilder.forName(to.name).directExecutor().build();
    try {
      return ShardReplicationGrpc.newBlockingStub(ch)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .replicate(request);
    } finally {
      ch.shutdownNow();
    }
  }

  /**
   * Delivers a copy's {@code chunks} (a Fill call) to {@code to}'s ShardReplication service now, as
   * {@link #replicate} does.
   *
   * @throws io.grpc.StatusRuntimeException when the service refuses it
   */
  static FillResponse fill(InProcessPserver to, List<FillChunk> chunks)
      throws InterruptedException {
    ManagedChannel ch = InProcessChannelBuilder.forName(to.name).directExecutor().build();
    try {
      CompletableFuture<FillResponse> done = new CompletableFuture<>();
      StreamObserver<FillChunk> upload =
          ShardReplicationGrpc.newStub(ch)
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .fill(
                  new StreamObserver<>() {
                    @Override
                    public void onNext(FillResponse value) {
                      done.complete(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                      done.completeExceptionally(t);
                    }

                    @Override
                    public void onCompleted() {
                      done.complete(FillResponse.getDefaultInstance());
                    }
                  });
      chunks.forEach(upload::onNext);
      upload.onCompleted();
      try {
        return done.get(10, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof StatusRuntimeException s) {
          throw s;
        }
        throw new IllegalStateException(e.getCause());
      } catch (TimeoutException e) {
        throw new IllegalStateException("the late copy was not answered in 10 s", e);
      }
    } finally {
      ch.shutdownNow();
    }
  }
}
