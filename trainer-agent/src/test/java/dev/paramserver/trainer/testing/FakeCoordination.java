package dev.paramserver.trainer.testing;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.AcquireLockRequest;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.AttendRequest;
import dev.paramserver.proto.v1.ClusterMap;
import dev.paramserver.proto.v1.CoordinationGrpc;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.proto.v1.ReleaseLockRequest;
import dev.paramserver.proto.v1.ReleaseLockResponse;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A Coordination service for in-process tests of the trainer's client: records joins, heartbeats
 * and lock calls; answers locks from a queue of scripted answers (GRANTED when empty); as a
 * standby, answers NOT_LEADER naming {@link #leader}; can break the open Attend stream.
 */
public final class FakeCoordination extends CoordinationGrpc.CoordinationImplBase
    implements AutoCloseable {
  private final String name = "fake-coordination-" + UUID.randomUUID();
  private final Server server; // over TCP only: null in-process
  private final InProcessGrpc grpc = new InProcessGrpc();
  public final Queue<JoinRequest> joins = new ConcurrentLinkedQueue<>();
  public final Queue<AcquireLockRequest> acquires = new ConcurrentLinkedQueue<>();
  public final Queue<ReleaseLockRequest> releases = new ConcurrentLinkedQueue<>();
  public final Queue<AcquireLockResponse> lockAnswers = new ConcurrentLinkedQueue<>();
  public final AtomicInteger heartbeats = new AtomicInteger();
  public final AtomicInteger halfCloses = new AtomicInteger();
  private final AtomicReference<StreamObserver<ClusterMap>> attending = new AtomicReference<>();

  /** When set, every call answers NOT_LEADER naming this address (empty: naming none). */
  public volatile String leader;

  /** The map sent to each new Attend stream. */
  public volatile ClusterMap map = ClusterMap.getDefaultInstance();

  /** An in-process service, reached by {@link InProcessChannels} at {@link #address()}. */
  public FakeCoordination() throws IOException {
    this(false);
  }

  /**
   * @param tcp listen on a free port of 127.0.0.1 (for a trainer's own channels) instead of
   *     in-process
   */
  public FakeCoordination(boolean tcp) throws IOException {
    if (tcp) {
      server =
          NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
              .addService(this)
              .build()
              .start();
    } else {
      server = null;
      grpc.startServer(name, b -> b.addService(this));
    }
  }

  /** The in-process name, or {@code 127.0.0.1:port} over TCP. */
  public String address() {
    return server == null
            || server.getListenSockets().isEmpty()
            || !(server.getListenSockets().get(0) instanceof InetSocketAddress a)
        ? name
        : "127.0.0.1:" + a.getPort();
  }

  @Override
  public void join(JoinRequest req, StreamObserver<JoinResponse> out) {
    if (refuse(out)) {
      return;
    }
    joins.add(req);
    out.onNext(
        JoinResponse.newBuilder()
            .setTrainerId(req.getTrainerId())
            .setJob("fake-job")
            .setHeartbeatMs(20)
            .setLeaseTtlMs(3000)
            .addAllParameters(req.getParametersList())
            .build());
    out.onCompleted();
  }

  @Override
  public StreamObserver<AttendRequest> attend(StreamObserver<ClusterMap> out) {
    if (refuse(out)) {
      return new Ignore();
    }
    attending.set(out);
    out.onNext(map);
    return new StreamObserver<>() {
      @Override
      public void onNext(AttendRequest r) {
        heartbeats.incrementAndGet();
      }

      @Override
      public void onError(Throwable t) {}

      @Override
      public void onCompleted() {
        halfCloses.incrementAndGet();
        out.onCompleted();
      }
    };
  }

  /** Sends {@code next} on the open Attend stream. */
  public void publish(ClusterMap next) {
    map = next;
    attending.get().onNext(next);
  }

  /** Ends the open Attend stream with UNAVAILABLE, as a master that goes away. */
  public void breakStream() {
    attending.getAndSet(null).onError(Status.UNAVAILABLE.asRuntimeException());
  }

  @Override
  public void acquireLock(AcquireLockRequest req, StreamObserver<AcquireLockResponse> out) {
    if (refuse(out)) {
      return;
    }
    acquires.add(req);
    AcquireLockResponse answer = lockAnswers.poll();
    out.onNext(
        answer != null
            ? answer
            : AcquireLockResponse.newBuilder()
                .setOutcome(AcquireLockResponse.Outcome.GRANTED)
                .build());
    out.onCompleted();
  }

  @Override
  public void releaseLock(ReleaseLockRequest req, StreamObserver<ReleaseLockResponse> out) {
    releases.add(req);
    out.onNext(ReleaseLockResponse.getDefaultInstance());
    out.onCompleted();
  }

  private boolean refuse(StreamObserver<?> out) {
    String l = leader;
    if (l == null) {
      return false;
    }
    ErrorInfo info =
        ErrorInfo.newBuilder()
            .setReason(ErrorReason.NOT_LEADER.name())
            .setDomain(RpcErrors.DOMAIN)
            .putMetadata("leader", l)
            .build();
    out.onError(
        StatusProto.toStatusRuntimeException(
            com.google.rpc.Status.newBuilder()
                .setCode(Status.Code.FAILED_PRECONDITION.value())
                .setMessage("not the leader")
                .addDetails(Any.pack(info))
                .build()));
    return true;
  }

  private static final class Ignore implements StreamObserver<AttendRequest> {
    @Override
    public void onNext(AttendRequest value) {}

    @Override
    public void onError(Throwable t) {}

    @Override
    public void onCompleted() {}
  }

  @Override
  public void close() {
    if (server != null) {
      server.shutdownNow();
      return;
    }
    try {
      grpc.close();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
