package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.nio.channels.ClosedChannelException;
import org.junit.jupiter.api.Test;

/** Which failed calls are worth repeating. */
class RpcErrorsTest {

  @Test
  void unknownChannelClosed_fromAKilledServer_isTransient_otherUnknownErrorsAreNot() {
    // what grpc-java's Netty transport reports when the server dies under a call
    Throwable closed =
        Status.UNKNOWN
            .withDescription("channel closed")
            .withCause(new ClosedChannelException())
            .asRuntimeException();
    assertThat(RpcErrors.isTransient(closed)).isTrue();
    assertThat(RpcErrors.isTransient(Status.UNKNOWN.withDescription("bug").asRuntimeException()))
        .isFalse();
    assertThat(RpcErrors.isTransient(Status.UNAVAILABLE.asRuntimeException())).isTrue();
    assertThat(RpcErrors.isTransient(Status.INVALID_ARGUMENT.asRuntimeException())).isFalse();
  }
}
