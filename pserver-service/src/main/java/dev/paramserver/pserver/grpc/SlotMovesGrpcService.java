package dev.paramserver.pserver.grpc;

import dev.paramserver.proto.v1.MoveInChunk;
import dev.paramserver.proto.v1.MoveInResponse;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.pserver.placement.MoveRequests;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.Offload;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.Executor;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The SlotMoves service (docs/explanation/elastic.md) over {@link MoveRequests}: {@code MoveOut}
 * from the coordinator to a slot's old owner runs on the blocking executor (it waits for the new
 * owner), {@code MoveIn} from the old owner to the new one is a stream that moves its own waits off
 * the transport threads, and {@code AwaitCopyInstalled} answers when the new owner's copy is in.
 */
@GrpcService
public final class SlotMovesGrpcService extends SlotMovesGrpc.SlotMovesImplBase {
  private final MoveRequests moves;
  private final Executor blocking;

  public SlotMovesGrpcService(
      MoveRequests moves, @Qualifier("pserverBlockingExecutor") Executor blocking) {
    this.moves = moves;
    this.blocking = blocking;
  }

  @Override
  public void moveOut(SlotMove move, StreamObserver<MoveOutResponse> out) {
    Offload.run(blocking, SlotMovesGrpc.SERVICE_NAME + "/MoveOut", out, () -> moves.moveOut(move));
  }

  @Override
  public StreamObserver<MoveInChunk> moveIn(StreamObserver<MoveInResponse> out) {
    return moves.moveIn(out);
  }

  /** Answers once the copy is installed, without holding a thread meanwhile. */
  @Override
  public void awaitCopyInstalled(SlotMove move, StreamObserver<MoveInResponse> out) {
    moves
        .copyInstalled(move)
        .whenComplete(
            (installed, failure) -> {
              try {
                if (failure != null) {
                  // CopyInstalls fails a copy with the MoveIn's own (runtime) failure
                  out.onError(
                      ErrorMappingInterceptor.map(
                          SlotMovesGrpc.SERVICE_NAME + "/AwaitCopyInstalled",
                          failure instanceof RuntimeException r
                              ? r
                              : new IllegalStateException(failure.toString(), failure)));
                } else {
                  out.onNext(installed);
                  out.onCompleted();
                }
              } catch (RuntimeException e) {
                // the old owner gave up waiting (its deadline): nothing to answer
              }
            });
  }
}
