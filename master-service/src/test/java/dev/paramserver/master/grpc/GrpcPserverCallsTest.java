package dev.paramserver.master.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.master.placement.PserverUnreachableException;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.FreePorts;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The master's outbound pserver calls over a real gRPC server on loopback: answers come through, a
 * pserver's refusal keeps its reason, and a pserver that does not answer is unreachable (what the
 * placement coordinator waits out).
 */
@Timeout(60)
class GrpcPserverCallsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(5);

  private final AtomicInteger statusCalls = new AtomicInteger();
  private Server server;
  private String address;

  @BeforeEach
  void startPserver() throws IOException {
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(
                new ParameterServerGrpc.ParameterServerImplBase() {
                  @Override
                  public void getShardStatus(
                      GetShardStatusRequest request, StreamObserver<ShardStatus> out) {
                    statusCalls.incrementAndGet();
                    out.onNext(ShardStatus.newBuilder().setAdminAddress("127.0.0.1:9").build());
                    out.onCompleted();
                  }
                })
            .addService(
                new SlotMovesGrpc.SlotMovesImplBase() {
                  @Override
                  public void moveOut(SlotMove move, StreamObserver<MoveOutResponse> out) {
                    if (move.getEpoch() == 7) {
                      out.onNext(MoveOutResponse.newBuilder().setRows(3).build());
                      out.onCompleted();
                    } else {
                      out.onError(
                          RpcErrors.toStatus(ErrorReason.NOT_PRIMARY, "epoch " + move.getEpoch()));
                    }
                  }
                })
            .build()
            .start();
    address = "127.0.0.1:" + server.getPort();
  }

  @AfterEach
  void stopPserver() throws InterruptedException {
    server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
  }

  @Test
  void statusAndMoveOut_answered_returnTheAnswers() {
    GrpcPserverCalls calls = new GrpcPserverCalls(ChannelFactory.plaintext());

    assertThat(calls.status(address, TIMEOUT).getAdminAddress()).isEqualTo("127.0.0.1:9");
    assertThat(calls.moveOut(address, SlotMove.newBuilder().setEpoch(7).build(), TIMEOUT).getRows())
        .isEqualTo(3);
  }

  @Test
  void moveOut_refused_throwsServiceExceptionWithTheReasonAndStatus() {
    GrpcPserverCalls calls = new GrpcPserverCalls(ChannelFactory.plaintext());

    assertThatThrownBy(
            () -> calls.moveOut(address, SlotMove.newBuilder().setEpoch(8).build(), TIMEOUT))
        .isInstanceOf(ServiceException.class)
        .isNotInstanceOf(PserverUnreachableException.class)
        .hasMessage("FAILED_PRECONDITION: epoch 8")
        .satisfies(
            e -> assertThat(((ServiceException) e).reason()).isEqualTo(ErrorReason.NOT_PRIMARY));
  }

  @Test
  void status_noPserverListening_throwsPserverUnreachable() {
    GrpcPserverCalls calls = new GrpcPserverCalls(ChannelFactory.plaintext());
    String nobody = "127.0.0.1:" + FreePorts.next();

    assertThatThrownBy(() -> calls.status(nobody, TIMEOUT))
        .isInstanceOf(PserverUnreachableException.class)
        .hasMessageStartingWith("UNAVAILABLE");
  }

  @Test
  void statusSource_afterRetainOnlyDropsItOrClose_opensAChannelAgain() {
    try (GrpcPserverStatuses source = new GrpcPserverStatuses(ChannelFactory.plaintext())) {
      assertThat(source.status(address, TIMEOUT).getAdminAddress()).isEqualTo("127.0.0.1:9");
      source.retainOnly(List.of(address));
      assertThat(source.status(address, TIMEOUT).getAdminAddress()).isEqualTo("127.0.0.1:9");
      source.retainOnly(List.of());
      assertThat(source.status(address, TIMEOUT).getAdminAddress()).isEqualTo("127.0.0.1:9");
      source.close();
      assertThat(source.status(address, TIMEOUT).getAdminAddress()).isEqualTo("127.0.0.1:9");
      assertThat(statusCalls).hasValue(4);
    }
  }

  @Test
  void statusSource_noPserverListening_throwsPserverUnreachable() {
    try (GrpcPserverStatuses source = new GrpcPserverStatuses(ChannelFactory.plaintext())) {
      assertThatThrownBy(() -> source.status("127.0.0.1:" + FreePorts.next(), TIMEOUT))
          .isInstanceOf(PserverUnreachableException.class);
    }
  }
}
