package dev.paramserver.pserver.grpc;

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.Offload;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One {@code StreamPushes} call: each request is handled as a unary push, in order, and answered in
 * order. The first refused request ends the call with its error and nothing read after it is
 * handled. Inbound flow control is manual: the next request is read once the answer of the one
 * before was handled and the client is ready to take more answers, so a client that does not read
 * its answers stops the server from reading its pushes instead of making it buffer them.
 *
 * <p>Pushes that may wait (the synchronous modes, {@code wal.sync=always}) run on the blocking
 * executor, one at a time per stream (the next is read only once one was answered), never on the
 * transport thread. A push that waits only for its backup is applied on the transport thread and
 * answered from the thread that receives the backup's acknowledgement ({@code pushAsync}).
 *
 * <p>A request that carries a pull ({@code pull}) is answered on the transport thread, in its turn,
 * by {@code pull}, which never waits: it reads the values or declines (the client then pulls by
 * {@code PullParameters}).
 *
 * <p>Each request is handed to {@code release} exactly once, when nothing reads it any more
 * (applied and logged, refused, or dropped because the call had ended): its bytes may be views of
 * the received buffers. Each answer built is handed to {@code sent} once its send call returned (or
 * when the call had ended and it was not sent): its pooled arrays' loan ends there.
 */
final class PushStream implements StreamObserver<PushGradientsRequest> {
  static final String METHOD = "paramserver.v1.ParameterServer/StreamPushes";

  private final ServerCallStreamObserver<PushGradientsResponse> out;
  private final Function<PushGradientsRequest, PushGradientsResponse> push;
  private final Function<PushGradientsRequest, PushGradientsResponse> pull;
  private final BooleanSupplier mayBlock;
  private final Function<PushGradientsRequest, CompletableFuture<PushGradientsResponse>> pushAsync;
  private final BooleanSupplier settlesAsync;
  private final Executor blocking;
  private final Consumer<PushGradientsRequest> release;
  private final Consumer<PushGradientsResponse> sent;
  // guarded by this: the call ended (error sent, client gone, or completed)
  private boolean closed;
  // guarded by this: the client half-closed; complete once the request in hand is answered
  private boolean halfClosed;
  // guarded by this: a request is being handled
  private boolean busy;
  // guarded by this: the next request is to be read once the client is ready
  private boolean readWhenReady;

  PushStream(
      ServerCallStreamObserver<PushGradientsResponse> out,
      Function<PushGradientsRequest, PushGradientsResponse> push,
      Function<PushGradientsRequest, PushGradientsResponse> pull,
      BooleanSupplier mayBlock,
      Function<PushGradientsRequest, CompletableFuture<PushGradientsResponse>> pushAsync,
      BooleanSupplier settlesAsync,
      Executor blocking,
      Consumer<PushGradientsRequest> release,
      Consumer<PushGradientsResponse> sent) {
    this.out = out;
    this.release = release;
    this.sent = sent;
    this.push = push;
    this.pull = pull;
    this.mayBlock = mayBlock;
    this.pushAsync = pushAsync;
    this.settlesAsync = settlesAsync;
    this.blocking = blocking;
    out.disableAutoRequest();
    out.setOnReadyHandler(this::onReady);
    out.setOnCancelHandler(
        () -> {
          synchronized (this) {
            closed = true;
          }
        });
    out.request(1);
  }

  @Override
  public void onNext(PushGradientsRequest request) {
    synchronized (this) {
      if (closed) {
        release.accept(request);
        return;
      }
      busy = true;
    }
    if (request.hasPull()) {
      handle(request, pull);
      return;
    }
    if (!mayBlock.getAsBoolean()) {
      handle(request, push);
      return;
    }
    if (settlesAsync.getAsBoolean()) {
      // applied here, answered when the backup acknowledged it: no thread waits meanwhile
      CompletableFuture<PushGradientsResponse> answer;
      try {
        answer = pushAsync.apply(request);
      } catch (RuntimeException e) {
        release.accept(request);
        fail(e);
        return;
      }
      answer.whenComplete(
          (response, error) -> {
            release.accept(request);
            if (error != null) {
              fail(Offload.unwrap(error));
            } else {
              answered(response);
            }
          });
      return;
    }
    try {
      blocking.execute(() -> handle(request, push));
    } catch (RejectedExecutionException e) {
      release.accept(request);
      fail(Offload.refusalOf(e));
    }
  }

  private void handle(
      PushGradientsRequest request, Function<PushGradientsRequest, PushGradientsResponse> handler) {
    PushGradientsResponse response;
    try {
      response = handler.apply(request);
    } catch (RuntimeException e) {
      fail(e);
      return;
    } finally {
      release.accept(request);
    }
    answered(response);
  }

  private void answered(PushGradientsResponse response) {
    synchronized (this) {
      busy = false;
      if (closed) {
        sent.accept(response);
        return;
      }
      try {
        out.onNext(response);
      } finally {
        sent.accept(response);
      }
      if (halfClosed) {
        closed = true;
        out.onCompleted();
      } else if (out.isReady()) {
        out.request(1);
      } else {
        readWhenReady = true;
      }
    }
  }

  private void fail(RuntimeException e) {
    synchronized (this) {
      busy = false;
      if (closed) {
        return;
      }
      closed = true;
      out.onError(ErrorMappingInterceptor.map(METHOD, e));
    }
  }

  private synchronized void onReady() {
    if (readWhenReady && !closed) {
      readWhenReady = false;
      out.request(1);
    }
  }

  @Override
  public synchronized void onError(Throwable t) {
    // the client cancelled or the connection broke: nothing more is sent or read
    closed = true;
  }

  @Override
  public synchronized void onCompleted() {
    if (closed) {
      return;
    }
    if (busy) {
      halfClosed = true;
    } else {
      closed = true;
      out.onCompleted();
    }
  }
}
