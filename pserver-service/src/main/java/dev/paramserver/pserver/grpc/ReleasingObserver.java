package dev.paramserver.pserver.grpc;

import com.google.protobuf.Message;
import dev.paramserver.rpc.ZeroCopyMarshaller;
import io.grpc.stub.StreamObserver;
import java.util.function.Consumer;

/**
 * A unary call's answer that first releases the request's received buffers: the request is not read
 * once its answer or error is being sent (and sending may throw when the call was cancelled); once
 * the answer's send call returned (or threw), {@code sent} is told of it (it ends the loan of the
 * answer's pooled arrays, see {@code LendingMarshaller}).
 */
final class ReleasingObserver<R> implements StreamObserver<R> {
  private final StreamObserver<R> out;
  private final Runnable release;
  private final Consumer<R> sent;

  /** Releases {@code request} (parsed by {@code marshaller}) before the answer is sent. */
  static <Q extends Message, R> ReleasingObserver<R> of(
      StreamObserver<R> out, ZeroCopyMarshaller<Q> marshaller, Q request, Consumer<R> sent) {
    return new ReleasingObserver<>(out, () -> marshaller.release(request), sent);
  }

  /** Nothing to release before the answer (a request parsed the stock way). */
  static <R> ReleasingObserver<R> sending(StreamObserver<R> out, Consumer<R> sent) {
    return new ReleasingObserver<>(out, () -> {}, sent);
  }

  private ReleasingObserver(StreamObserver<R> out, Runnable release, Consumer<R> sent) {
    this.out = out;
    this.release = release;
    this.sent = sent;
  }

  @Override
  public void onNext(R value) {
    release.run();
    try {
      out.onNext(value);
    } finally {
      sent.accept(value);
    }
  }

  @Override
  public void onError(Throwable t) {
    release.run();
    out.onError(t);
  }

  @Override
  public void onCompleted() {
    release.run();
    out.onCompleted();
  }
}
