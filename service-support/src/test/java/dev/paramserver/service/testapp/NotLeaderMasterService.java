package dev.paramserver.service.testapp;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.context.event.EventListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;
import org.springframework.grpc.server.service.GrpcService;

/** A gRPC service whose handler throws a domain error, as a standby master's would. */
@GrpcService
public class NotLeaderMasterService extends MasterGrpc.MasterImplBase {
  private final AtomicInteger port = new AtomicInteger(-1);

  @Override
  public void getStatus(GetStatusRequest request, StreamObserver<JobStatus> response) {
    throw new ServiceException(ErrorReason.NOT_LEADER, "not the leader: ask 10.0.0.1:7000");
  }

  @EventListener
  void onStarted(GrpcServerStartedEvent event) {
    port.set(event.getPort());
  }

  /** The port the gRPC server listens on. */
  public int port() {
    return port.get();
  }
}
