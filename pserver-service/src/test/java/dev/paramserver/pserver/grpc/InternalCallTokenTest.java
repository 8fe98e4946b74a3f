package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.FollowMessage;
import dev.paramserver.proto.v1.FollowRequest;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardFollowGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.JobToken;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The job's token on internal calls (replication, slot moves, the ShardFollow stream serving
 * replicas read), over real gRPC (Netty on loopback).
 */
@Timeout(60)
class InternalCallTokenTest {
  private static final String TOKEN = "job-secret-0123456789";
  private Server server;
  private String address;

  @BeforeEach
  void start() throws Exception {
    SlotMovesGrpc.SlotMovesImplBase moves =
        new SlotMovesGrpc.SlotMovesImplBase() {
          @Override
          public void moveOut(SlotMove request, StreamObserver<MoveOutResponse> out) {
            out.onNext(MoveOutResponse.newBuilder().setRows(7).build());
            out.onCompleted();
          }
        };
    ParameterServerGrpc.ParameterServerImplBase trainerFacing =
        new ParameterServerGrpc.ParameterServerImplBase() {
          @Override
          public void getShardStatus(
              GetShardStatusRequest request, StreamObserver<ShardStatus> out) {
            out.onNext(ShardStatus.newBuilder().setIndex(3).build());
            out.onCompleted();
          }
        };
    ShardFollowGrpc.ShardFollowImplBase follow =
        new ShardFollowGrpc.ShardFollowImplBase() {
          @Override
          public void follow(FollowRequest request, StreamObserver<FollowMessage> out) {
            out.onNext(FollowMessage.newBuilder().setEpoch(9).build());
            out.onCompleted();
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(trainerFacing)
            .addService(moves)
            .addService(follow)
            .intercept(JobToken.require(TOKEN, InternalCallsConfiguration.INTERNAL))
            .build()
            .start();
    address = "127.0.0.1:" + server.getPort();
  }

  @AfterEach
  void stop() throws InterruptedException {
    server.shutdownNow();
    server.awaitTermination(10, TimeUnit.SECONDS);
  }

  private static MoveOutResponse moveOut(ManagedChannel ch) {
    return SlotMovesGrpc.newBlockingStub(ch)
        .withDeadlineAfter(10, TimeUnit.SECONDS)
        .moveOut(SlotMove.getDefaultInstance());
  }

  @Test
  void internalCall_withoutTheToken_isRefusedUnauthenticated_withoutNamingIt() {
    ManagedChannel ch = Channels.forAddress(address);
    try {
      assertThatThrownBy(() -> moveOut(ch))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                assertThat(e.getMessage()).contains("job's token").doesNotContain(TOKEN);
              });
    } finally {
      Channels.close(ch);
    }
  }

  /** The first message of a Follow stream (the test's service sends one, then ends). */
  private static FollowMessage follow(ManagedChannel ch) {
    Iterator<FollowMessage> stream =
        ShardFollowGrpc.newBlockingStub(ch)
            .withDeadlineAfter(10, TimeUnit.SECONDS)
            .follow(FollowRequest.getDefaultInstance());
    FollowMessage first = stream.next();
    stream.forEachRemaining(m -> {});
    return first;
  }

  @Test
  void shardFollow_withoutTheToken_isRefused_withItIsServed() {
    ManagedChannel anonymous = Channels.forAddress(address);
    ManagedChannel serving = Channels.forAddress(address, JobToken.attach(TOKEN));
    try {
      assertThatThrownBy(() -> follow(anonymous))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
                assertThat(e.getMessage())
                    .contains("paramserver.v1.ShardFollow is internal")
                    .doesNotContain(TOKEN);
              });
      assertThat(follow(serving).getEpoch()).isEqualTo(9);
    } finally {
      Channels.close(anonymous);
      Channels.close(serving);
    }
  }

  @Test
  void internalCall_withAnotherToken_isRefused() {
    ManagedChannel ch = Channels.forAddress(address, JobToken.attach("guessed"));
    try {
      assertThatThrownBy(() -> moveOut(ch))
          .isInstanceOfSatisfying(
              StatusRuntimeException.class,
              e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
    } finally {
      Channels.close(ch);
    }
  }

  @Test
  void internalCall_withTheToken_isServed_andTrainerCallsNeedNone() {
    ManagedChannel peer = Channels.forAddress(address, JobToken.attach(TOKEN));
    ManagedChannel trainer = Channels.forAddress(address);
    try {
      assertThat(moveOut(peer).getRows()).isEqualTo(7);
      assertThat(
              ParameterServerGrpc.newBlockingStub(trainer)
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                  .getIndex())
          .isEqualTo(3);
    } finally {
      Channels.close(peer);
      Channels.close(trainer);
    }
  }
}
