package dev.paramserver.pserver.grpc;

import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.ServerStreamTracer;
import java.util.function.LongConsumer;

/**
 * The bytes of a call's requests as the transport reads them off the wire, before a request is
 * whole: a stream tracer (the transport's own count of each length-prefixed message's body) that
 * {@link CallLimits} finds in the call's {@link Context} and listens to. So a unary call holds what
 * it really received, not the largest request it might send.
 *
 * <p>The transport reads a request only once the call asked for it, which happens after the
 * interceptors ran: no byte is read before {@link CallLimits} attached. With the pserver's direct
 * executor the transport thread that reads the bytes is also the one that runs the call.
 */
public final class ReceivedBytes extends ServerStreamTracer.Factory {
  private static final Context.Key<Tracer> KEY = Context.key("paramserver.received-bytes");

  @Override
  public ServerStreamTracer newServerStreamTracer(String fullMethodName, Metadata headers) {
    return new Tracer();
  }

  /**
   * Hands the current call's received bytes to {@code sink}, from now on; false when the call has
   * no tracer (a server built without this factory, an in-process server).
   */
  static boolean listen(LongConsumer sink) {
    Tracer tracer = KEY.get();
    if (tracer == null) {
      return false;
    }
    tracer.sink = sink;
    return true;
  }

  private static final class Tracer extends ServerStreamTracer {
    private volatile LongConsumer sink = bytes -> {};

    @Override
    public Context filterContext(Context context) {
      return context.withValue(KEY, this);
    }

    @Override
    public void inboundWireSize(long bytes) {
      sink.accept(bytes);
    }
  }
}
