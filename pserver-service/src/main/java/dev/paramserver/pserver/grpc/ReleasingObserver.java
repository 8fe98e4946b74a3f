package dev.paramserver.pserver.grpc;

import com.google.protobuf.Message;
import dev.paramserver.rpc.ZeroCopyMarshaller;
import io.grpc.stub.StreamObserver;

/**
 * A unary call's answer that first releases the request's received buffers: the request is not read
 * once its answer or error is being sent (and sending may throw when the call was cancelled).
 */
final class ReleasingObserver<Q extends Message, R> implements StreamObserver<R> {
  private final StreamObserver<R> out;
  private final ZeroCopyMarshaller<Q> marshaller;
  private final Q request;

  ReleasingObserver(StreamObserver<R> out, ZeroCopyMarshaller<Q> marshaller, Q request) {
    this.out = out;
    this.marshaller = marshaller;
    this.request = request;
  }

  @Override
  public void onNext(R value) {
    marshaller.release(request);
    out.onNext(value);
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
