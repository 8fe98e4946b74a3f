package dev.paramserver.rpc;

import com.google.protobuf.Message;
import io.grpc.ForwardingServerCallListener.SimpleForwardingServerCallListener;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rebinds a service's methods with {@link ZeroCopyMarshaller} request marshallers, keeping their
 * handlers.
 */
public final class ZeroCopyServices {
  private ZeroCopyServices() {}

  /**
   * One method to rebind (its full name), when not null its request marshaller and, when not null,
   * its response marshaller (a {@link LendingMarshaller}, say).
   */
  public record Rebinding(
      String fullMethodName,
      ZeroCopyMarshaller<?> marshaller,
      MethodDescriptor.Marshaller<?> responses) {
    /** The request marshaller only. */
    public Rebinding(String fullMethodName, ZeroCopyMarshaller<?> marshaller) {
      this(fullMethodName, marshaller, null);
    }
  }

  /**
   * {@code service} with the methods named in {@code rebindings} taking their requests through the
   * given marshallers. A unary method's request the handler never receives (the call cancelled
   * before its half-close, or a second request) is released here; a streaming method's handler owns
   * each request from its {@code onNext} on.
   */
  public static ServerServiceDefinition rebind(
      ServerServiceDefinition service, List<Rebinding> rebindings) {
    Map<String, Rebinding> by = new HashMap<>();
    rebindings.forEach(r -> by.put(r.fullMethodName(), r));
    ServiceDescriptor old = service.getServiceDescriptor();
    List<ServerMethodDefinition<?, ?>> methods = new ArrayList<>();
    ServiceDescriptor.Builder descriptor =
        ServiceDescriptor.newBuilder(old.getName()).setSchemaDescriptor(old.getSchemaDescriptor());
    for (ServerMethodDefinition<?, ?> m : service.getMethods()) {
      Rebinding r = by.remove(m.getMethodDescriptor().getFullMethodName());
      ServerMethodDefinition<?, ?> bound =
          r == null ? m : rebound(m, r.marshaller(), r.responses());
      methods.add(bound);
      descriptor.addMethod(bound.getMethodDescriptor());
    }
    if (!by.isEmpty()) {
      throw new IllegalArgumentException(
          "service " + old.getName() + " has no methods " + by.keySet());
    }
    ServerServiceDefinition.Builder out = ServerServiceDefinition.builder(descriptor.build());
    methods.forEach(out::addMethod);
    return out.build();
  }

  @SuppressWarnings("unchecked")
  private static <Q, R> ServerMethodDefinition<Q, R> rebound(
      ServerMethodDefinition<Q, R> m,
      ZeroCopyMarshaller<?> marshaller,
      MethodDescriptor.Marshaller<?> responses) {
    MethodDescriptor.Builder<Q, R> b = m.getMethodDescriptor().toBuilder();
    if (marshaller != null) {
      b.setRequestMarshaller((MethodDescriptor.Marshaller<Q>) marshaller);
    }
    if (responses != null) {
      b.setResponseMarshaller((MethodDescriptor.Marshaller<R>) responses);
    }
    MethodDescriptor<Q, R> method = b.build();
    ServerCallHandler<Q, R> handler = m.getServerCallHandler();
    if (marshaller != null && method.getType().clientSendsOneMessage()) {
      handler = releasingUnary(handler, (ZeroCopyMarshaller<Message>) marshaller);
    }
    return ServerMethodDefinition.create(method, handler);
  }

  /**
   * Wraps a unary handler so that a request it never hands to the method is released: the call
   * cancelled before the client's half-close, or a second request (the call then fails). From the
   * half-close on, the method owns the request.
   */
  static <Q, R> ServerCallHandler<Q, R> releasingUnary(
      ServerCallHandler<Q, R> handler, ZeroCopyMarshaller<Message> marshaller) {
    return (call, headers) ->
        new SimpleForwardingServerCallListener<Q>(handler.startCall(call, headers)) {
          private Q pending;
          private boolean dispatched;
          private boolean refused;

          @Override
          public void onMessage(Q message) {
            if (pending == null && !refused) {
              pending = message;
            } else {
              // the stock handler fails the call: neither request reaches the method
              refused = true;
              marshaller.release((Message) message);
              marshaller.release((Message) pending);
            }
            super.onMessage(message);
          }

          @Override
          public void onHalfClose() {
            dispatched = !refused;
            super.onHalfClose();
          }

          @Override
          public void onCancel() {
            if (!dispatched) {
              marshaller.release((Message) pending);
            }
            super.onCancel();
          }

          @Override
          public void onComplete() {
            if (!dispatched) {
              marshaller.release((Message) pending);
            }
            super.onComplete();
          }
        };
  }
}
