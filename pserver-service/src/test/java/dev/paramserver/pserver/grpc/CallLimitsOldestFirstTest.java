package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.Context;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerStreamTracer;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The byte limit's order among requests read side by side, driven step by step: the calls' wire
 * bytes go through the real {@link ReceivedBytes} tracer, the calls are plain recording {@link
 * ServerCall}s, so each interleaving is chosen by the test (over a real socket, the interleaving
 * that refused every push of a flood only shows on a loaded machine).
 */
class CallLimitsOldestFirstTest {
  private static final long MIB = 1 << 20;

  private final RefusalCounter refusals = new RefusalCounter(new SimpleMeterRegistry());
  private final List<Object> released = new ArrayList<>();
  private final CallLimits limits =
      new CallLimits(1024, 4 * MIB, Duration.ofMillis(300), refusals, released::add);

  /**
   * A unary push call as the transport drives it: wire bytes, then its request, then half-close.
   */
  private final class Push {
    final ServerStreamTracer tracer = new ReceivedBytes().newServerStreamTracer("push", null);
    final AtomicReference<StatusRuntimeException> closed = new AtomicReference<>();
    final List<PushGradientsRequest> served = new ArrayList<>();
    final ServerCall.Listener<PushGradientsRequest> listener;

    Push() {
      ServerCall<PushGradientsRequest, PushGradientsResponse> call =
          new ServerCall<>() {
            @Override
            public void request(int numMessages) {}

            @Override
            public void sendHeaders(Metadata headers) {}

            @Override
            public void sendMessage(PushGradientsResponse message) {}

            @Override
            public void close(Status status, Metadata trailers) {
              assertThat(closed.compareAndSet(null, status.asRuntimeException(trailers)))
                  .as("closed once")
                  .isTrue();
            }

            @Override
            public boolean isCancelled() {
              return false;
            }

            @Override
            public MethodDescriptor<PushGradientsRequest, PushGradientsResponse>
                getMethodDescriptor() {
              return ParameterServerGrpc.getPushGradientsMethod();
            }
          };
      // the call's context holds its tracer, as the transport's does
      Context previous = tracer.filterContext(Context.current()).attach();
      try {
        listener =
            limits.interceptCall(
                call,
                new Metadata(),
                (c, h) ->
                    new ServerCall.Listener<>() {
                      @Override
                      public void onMessage(PushGradientsRequest message) {
                        served.add(message);
                      }
                    });
      } finally {
        Context.current().detach(previous);
      }
    }

    void wire(long bytes) {
      tracer.inboundWireSize(bytes);
    }

    /** Its request whole ({@code bytes} of wire, all counted already), then its half-close. */
    void whole(long bytes) {
      int n = (int) bytes - 16;
      PushGradientsRequest request = ofSession(n);
      while (request.getSerializedSize() < bytes) {
        request = ofSession(++n);
      }
      assertThat(request.getSerializedSize()).isEqualTo(bytes);
      listener.onMessage(request);
      listener.onHalfClose();
    }
  }

  private static PushGradientsRequest ofSession(int n) {
    return PushGradientsRequest.newBuilder()
        .setSessionBytes(com.google.protobuf.ByteString.copyFrom(new byte[n]))
        .build();
  }

  private static void assertRefusedAtTheByteLimit(Push p) {
    assertThat(p.closed.get()).as("closed").isNotNull();
    assertThat(p.closed.get().getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    assertThat(RpcErrors.reasonOf(p.closed.get())).isEqualTo(ErrorReason.OVERLOADED);
    assertThat(RpcErrors.metadataOf(p.closed.get())).containsEntry("limit", CallLimits.BYTES);
    assertThat(p.served).as("never handed to the service").isEmpty();
  }

  /**
   * The defect: two large requests read side by side, the older one's bytes crossing the limit
   * first. It was refused, and so was the next pair's, so a flood could refuse every push. Now the
   * older one makes room by refusing the younger (closed at its own next event) and is served.
   */
  @Test
  void olderRequestCrossingTheLimit_refusesTheYoungerBeingRead_andIsServed() {
    Push older = new Push();
    Push younger = new Push();
    younger.wire(2 * MIB);
    older.wire(1 * MIB);
    older.wire(2 * MIB); // 5 MiB held: past the 4 MiB limit, with the younger holding 2

    assertThat(older.closed.get()).as("the older one is not refused").isNull();
    assertThat(limits.queuedBytes()).as("the younger one's bytes given back").isEqualTo(3 * MIB);
    assertThat(younger.closed.get()).as("closed on its own thread, at its next event").isNull();

    younger.wire(MIB);
    assertRefusedAtTheByteLimit(younger);
    assertThat(refusals.count(CallLimits.BYTES)).isEqualTo(1.0);
    assertThat(limits.queuedBytes()).as("the younger one's late bytes not held").isEqualTo(3 * MIB);
    younger.whole(3 * MIB);
    assertThat(younger.served).isEmpty();
    assertThat(released).as("its request released, never served").hasSize(1);

    older.whole(3 * MIB);
    assertThat(older.served).hasSize(1);
    assertThat(older.closed.get()).isNull();
  }

  /** The younger one crossing the limit is refused at once, as before; the older one is served. */
  @Test
  void youngerRequestCrossingTheLimit_isRefusedAtOnce() {
    Push older = new Push();
    Push younger = new Push();
    older.wire(3 * MIB);
    younger.wire(2 * MIB);

    assertRefusedAtTheByteLimit(younger);
    assertThat(limits.queuedBytes()).isEqualTo(3 * MIB);
    older.whole(3 * MIB);
    assertThat(older.served).hasSize(1);
    assertThat(older.closed.get()).isNull();
  }

  /**
   * What the service holds is never taken back: an older request being read that finds no room once
   * the younger ones are refused is refused itself.
   */
  @Test
  void requestsTheServiceHolds_areNeverRefused_theOldestBeingReadIsWhenTheyLeaveNoRoom() {
    Push served = new Push();
    served.wire(3 * MIB);
    served.whole(3 * MIB);
    assertThat(served.served).hasSize(1);

    Push older = new Push();
    Push younger = new Push();
    younger.wire(MIB / 2);
    older.wire(MIB / 4);
    older.wire(MIB); // 4.75 MiB: the younger's half MiB is not enough room

    assertRefusedAtTheByteLimit(older);
    assertThat(younger.closed.get()).isNull();
    assertThat(limits.queuedBytes()).isEqualTo(3 * MIB + MIB / 2);
    younger.whole(MIB / 2);
    assertThat(younger.served).hasSize(1);
  }
}
