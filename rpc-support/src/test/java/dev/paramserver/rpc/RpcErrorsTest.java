package dev.paramserver.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.channels.ClosedChannelException;
import java.util.Map;
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

  @Test
  void serviceExceptionMetadata_travelsInTheErrorInfo_withTheReasonsCode() {
    StatusRuntimeException e =
        RpcErrors.toStatus(
            new ServiceException(
                ErrorReason.NOT_LEADER, "not the leader", Map.of("leader", "10.0.0.1:50051")));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(e)).isEqualTo(ErrorReason.NOT_LEADER);
    assertThat(RpcErrors.metadataOf(e)).containsEntry("leader", "10.0.0.1:50051");
    assertThat(RpcErrors.metadataOf(Status.INTERNAL.asRuntimeException())).isEmpty();
  }

  @Test
  void coordinationReasons_haveTheirContractCodes() {
    assertThat(RpcErrors.codeFor(ErrorReason.NOT_JOINED))
        .isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.codeFor(ErrorReason.MODEL_MISMATCH))
        .isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.codeFor(ErrorReason.NO_MODEL)).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.codeFor(ErrorReason.TRAINER_ID_TAKEN))
        .isEqualTo(Status.Code.ALREADY_EXISTS);
  }
}
