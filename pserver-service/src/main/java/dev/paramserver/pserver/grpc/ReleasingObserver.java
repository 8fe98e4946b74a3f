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
final class ReleasingObserver<Q extends Message, R> implements StreamObserver<R> {
  private final StreamObserver<R> out;
  private final ZeroCopyMarshaller<Q> marshaller;
  private final Q request;
  private final Consumer<R> sent;

  ReleasingObserver(
      StreamObserver<R> out, ZeroCopyMarshaller<Q> marshaller, Q request, Consumer<R> sent) {
    this.out = out;
    this.marshaller = marshaller;
    this.request = request;
    this.sent = sent;
  }

  @Override
  public void onNext(R value) {
    marshaller.release(request);
    try {
      out.onNext(value);
    } finally {
      sent.accept(value);
    }
  }

  @Override
  public void onError(Throwable t) {
    marshaller.release(request);
    out.onError(t);
  }

  @Override
  public void onCompleted() {
    marshaller.release(request);
    out.onCompleted();
  }
}
