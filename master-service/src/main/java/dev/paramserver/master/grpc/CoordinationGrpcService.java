package dev.paramserver.master.grpc;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.coordination.AttendSink;
import dev.paramserver.master.coordination.Attendance;
import dev.paramserver.master.coordination.CoordinatedTrainers;
import dev.paramserver.proto.v1.AcquireLockRequest;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.AttendRequest;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.CoordinationGrpc;
import dev.paramserver.proto.v1.GetPlacementRequest;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.proto.v1.Placement;
import dev.paramserver.proto.v1.ReleaseLockRequest;
import dev.paramserver.proto.v1.ReleaseLockResponse;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.RpcErrors;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The Coordination gRPC service: a thin adapter over {@link CoordinatedTrainers}. Unary errors are
 * thrown as {@link ServiceException} and mapped by the ErrorMappingInterceptor; an Attend stream's
 * end is written here (UNAVAILABLE with reason NOT_LEADER when this master steps down, so the
 * trainer reconnects).
 */
@GrpcService(interceptors = PeerAddressInterceptor.class)
public final class CoordinationGrpcService extends CoordinationGrpc.CoordinationImplBase {
  private static final String ATTEND = CoordinationGrpc.getAttendMethod().getFullMethodName();
  private final CoordinatedTrainers coordination;

  public CoordinationGrpcService(CoordinatedTrainers coordination) {
    this.coordination = coordination;
  }

  @Override
  public void join(JoinRequest req, StreamObserver<JoinResponse> out) {
    reply(out, coordination.join(req, PeerAddressInterceptor.host()));
  }

  @Override
  public StreamObserver<AttendRequest> attend(StreamObserver<ClusterMap> out) {
    ServerCallStreamObserver<ClusterMap> call = (ServerCallStreamObserver<ClusterMap>) out;
    return new StreamObserver<>() {
      // grpc-java calls these one at a time for a call
      private Attendance membership;
      private boolean refused;

      @Override
      public void onNext(AttendRequest req) {
        if (refused) {
          return;
        }
        if (membership != null) {
          membership.heartbeat();
          return;
        }
        try {
          membership = coordination.attend(req, new StreamSink(call));
        } catch (RuntimeException e) {
          refused = true;
          out.onError(ErrorMappingInterceptor.map(ATTEND, e));
        }
      }

      @Override
      public void onError(Throwable t) {
        if (membership != null) {
          coordination.left(membership, false);
        }
      }

      @Override
      public void onCompleted() {
        if (membership != null) {
          coordination.left(membership, true);
        } else if (!refused) {
          out.onCompleted();
        }
      }
    };
  }

  @Override
  public void getPlacement(GetPlacementRequest req, StreamObserver<Placement> out) {
    reply(out, coordination.placement(req));
  }

  @Override
  public void acquireLock(AcquireLockRequest req, StreamObserver<AcquireLockResponse> out) {
    reply(out, coordination.acquire(req));
  }

  @Override
  public void releaseLock(ReleaseLockRequest req, StreamObserver<ReleaseLockResponse> out) {
    coordination.release(req);
    reply(out, ReleaseLockResponse.getDefaultInstance());
  }

  /** Writes a membership's cluster maps and end to its Attend response stream. */
  private record StreamSink(ServerCallStreamObserver<ClusterMap> call) implements AttendSink {
    @Override
    public void send(ClusterMap map) {
      if (!call.isCancelled()) {
        call.onNext(map);
      }
    }

    @Override
    public void complete() {
      if (!call.isCancelled()) {
        call.onCompleted();
      }
    }

    @Override
    public void fail(ServiceException why) {
      if (!call.isCancelled()) {
        call.onError(RpcErrors.toStatus(why));
      }
    }

    @Override
    public void reconnect(ServiceException notLeader) {
      if (!call.isCancelled()) {
        call.onError(
            RpcErrors.toStatus(
                Status.Code.UNAVAILABLE,
                notLeader.reason(),
                notLeader.getMessage(),
                notLeader.metadata()));
      }
    }
  }

  private static <T> void reply(StreamObserver<T> out, T value) {
    out.onNext(value);
    out.onCompleted();
  }
}
