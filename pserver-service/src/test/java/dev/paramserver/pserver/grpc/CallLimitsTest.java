package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The call limit over real gRPC: calls past it are refused OVERLOADED with a retry hint. */
@Timeout(60)
class CallLimitsTest {
  private final CountDownLatch release = new CountDownLatch(1);
  private final RefusalCounter refusals = new RefusalCounter(new SimpleMeterRegistry());
  private final CallLimits limits =
      new CallLimits(2, 1 << 20, 1024, Duration.ofMillis(300), refusals, m -> {});
  private final List<Thread> waiting = new ArrayList<>();
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws InterruptedException {
    release.countDown();
    for (Thread t : waiting) {
      t.join(10_000);
    }
    Channels.close(channel);
    server.shutdownNow();
    server.awaitTermination(10, TimeUnit.SECONDS);
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub() throws Exception {
    ParameterServerGrpc.ParameterServerImplBase slow =
        new ParameterServerGrpc.ParameterServerImplBase() {
          @Override
          public void getShardStatus(
              GetShardStatusRequest request, StreamObserver<ShardStatus> out) {
            try {
              release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
            out.onNext(ShardStatus.getDefaultInstance());
            out.onCompleted();
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .addService(slow)
            .intercept(limits)
            .build()
            .start();
    channel = Channels.forAddress("127.0.0.1:" + server.getPort());
    return ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
  }

  @Test
  void callPastTheLimit_isRefusedOverloaded_withARetryHint_andCounted_andTheLimitFreesAgain()
      throws Exception {
    ParameterServerGrpc.ParameterServerBlockingStub stub = stub();
    for (int i = 0; i < 2; i++) {
      Thread t = new Thread(() -> stub.getShardStatus(GetShardStatusRequest.getDefaultInstance()));
      t.start();
      waiting.add(t);
    }
    Poll.until(Duration.ofSeconds(20), () -> limits.calls() == 2, "two calls in flight");

    assertThatThrownBy(() -> stub.getShardStatus(GetShardStatusRequest.getDefaultInstance()))
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            e -> {
              assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(RpcErrors.reasonOf(e)).isEqualTo(ErrorReason.OVERLOADED);
              assertThat(RpcErrors.retryAfterOf(e)).contains(Duration.ofMillis(300));
              assertThat(RpcErrors.metadataOf(e))
                  .containsEntry("limit", "calls")
                  .containsEntry(RpcErrors.RETRY_AFTER_MS, "300");
              assertThat(RpcErrors.isTransient(e)).isTrue();
            });
    assertThat(refusals.count(CallLimits.CALLS)).isEqualTo(1.0);

    release.countDown();
    Poll.until(Duration.ofSeconds(20), () -> limits.calls() == 0, "the calls closed");
    assertThat(stub.getShardStatus(GetShardStatusRequest.getDefaultInstance())).isNotNull();
    assertThat(limits.queuedBytes()).isZero();
  }
}
