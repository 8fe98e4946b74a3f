package dev.paramserver.pserver.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TensorBlock;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The call and byte limits over real gRPC (Netty, with the {@link ReceivedBytes} tracer): calls
 * past them are refused OVERLOADED with a retry hint; ordinary concurrency is never refused.
 */
@Timeout(60)
class CallLimitsTest {
  private static final long MAX_BYTES = 4 << 20;

  private final CountDownLatch release = new CountDownLatch(1);
  private final RefusalCounter refusals = new RefusalCounter(new SimpleMeterRegistry());
  private final AtomicInteger unreferenced = new AtomicInteger();
  private final AtomicInteger pushesSeen = new AtomicInteger();
  private final ExecutorService clients = Executors.newCachedThreadPool();
  private CallLimits limits =
      new CallLimits(2, MAX_BYTES, Duration.ofMillis(300), refusals, m -> {});
  private Server server;
  private ManagedChannel channel;

  @AfterEach
  void stop() throws InterruptedException {
    release.countDown();
    clients.shutdown();
    assertThat(clients.awaitTermination(20, TimeUnit.SECONDS)).isTrue();
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
            await();
            out.onNext(ShardStatus.getDefaultInstance());
            out.onCompleted();
          }

          @Override
          public void pushGradients(
              PushGradientsRequest request, StreamObserver<PushGradientsResponse> out) {
            pushesSeen.incrementAndGet();
            await();
            out.onNext(PushGradientsResponse.getDefaultInstance());
            out.onCompleted();
          }
        };
    server =
        NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
            .maxInboundMessageSize(64 << 20)
            .addService(slow)
            .intercept(limits)
            .addStreamTracerFactory(new ReceivedBytes())
            .build()
            .start();
    channel = Channels.forAddress("127.0.0.1:" + server.getPort());
    return ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS);
  }

  private void await() {
    try {
      release.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static PushGradientsRequest push(int bytes) {
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t")
        .addGradients(
            TensorBlock.newBuilder().setName("w").setData(ByteString.copyFrom(new byte[bytes])))
        .build();
  }

  private Future<PushGradientsResponse> pushInBackground(
      ParameterServerGrpc.ParameterServerBlockingStub stub, int bytes) {
    return clients.submit(() -> stub.pushGradients(push(bytes)));
  }

  private static void assertOverloaded(Throwable e, String limit) {
    assertThat(e)
        .isInstanceOfSatisfying(
            StatusRuntimeException.class,
            s -> {
              assertThat(s.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
              assertThat(RpcErrors.reasonOf(s)).isEqualTo(ErrorReason.OVERLOADED);
              assertThat(RpcErrors.retryAfterOf(s)).contains(Duration.ofMillis(300));
              assertThat(RpcErrors.metadataOf(s))
                  .containsEntry("limit", limit)
                  .containsEntry(RpcErrors.RETRY_AFTER_MS, "300");
              assertThat(RpcErrors.isTransient(s)).isTrue();
            });
  }

  @Test
  void callPastTheLimit_isRefusedOverloaded_withARetryHint_andCounted_andTheLimitFreesAgain()
      throws Exception {
    ParameterServerGrpc.ParameterServerBlockingStub stub = stub();
    List<Future<ShardStatus>> waiting = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      waiting.add(
          clients.submit(() -> stub.getShardStatus(GetShardStatusRequest.getDefaultInstance())));
    }
    Poll.until(Duration.ofSeconds(20), () -> limits.calls() == 2, "two calls in flight");

    assertThatThrownBy(() -> stub.getShardStatus(GetShardStatusRequest.getDefaultInstance()))
        .satisfies(e -> assertOverloaded(e, CallLimits.CALLS));
    assertThat(refusals.count(CallLimits.CALLS)).isEqualTo(1.0);

    release.countDown();
    for (Future<ShardStatus> f : waiting) {
      assertThat(f.get(20, TimeUnit.SECONDS)).isNotNull();
    }
    Poll.until(Duration.ofSeconds(20), () -> limits.calls() == 0, "the calls closed");
    assertThat(stub.getShardStatus(GetShardStatusRequest.getDefaultInstance())).isNotNull();
    assertThat(limits.queuedBytes()).isZero();
  }

  /**
   * The defect that took the limits out once: each unary call reserved the 64 MB message cap from
   * its start, so a few concurrent ordinary pushes were refused. Here 32 pushes of 64 KiB are in
   * flight at once under a 4 MiB byte limit (32 message caps would be 2 GiB): all are taken.
   */
  @Test
  void manyConcurrentOrdinaryPushes_areAllTaken_theirRealBytesHeld_notAMessageCapEach()
      throws Exception {
    limits = new CallLimits(1024, MAX_BYTES, Duration.ofMillis(300), refusals, m -> {});
    ParameterServerGrpc.ParameterServerBlockingStub stub = stub();
    List<Future<PushGradientsResponse>> pushes = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      pushes.add(pushInBackground(stub, 64 << 10));
    }
    Poll.until(Duration.ofSeconds(30), () -> pushesSeen.get() == 32, "32 pushes in the service");
    assertThat(limits.calls()).isEqualTo(32);
    assertThat(limits.queuedBytes()).isBetween(32L * (64 << 10), 32L * (65 << 10));

    release.countDown();
    for (Future<PushGradientsResponse> f : pushes) {
      assertThat(f.get(20, TimeUnit.SECONDS)).isNotNull();
    }
    assertThat(refusals.count(CallLimits.CALLS) + refusals.count(CallLimits.BYTES)).isZero();
    Poll.until(Duration.ofSeconds(20), () -> limits.queuedBytes() == 0, "bytes given back");
  }

  /**
   * A 40 MiB push while another call holds 3 MiB takes the total past 4 MiB as its bytes arrive: it
   * is refused before its request is whole (the service never sees it, nothing is parsed), and once
   * the first call closed a lone push above the limit is taken.
   */
  @Test
  void largePushWhileAnotherHoldsBytes_isRefusedMidRequest_andALoneLargePushIsTaken()
      throws Exception {
    limits =
        new CallLimits(
            1024, MAX_BYTES, Duration.ofMillis(300), refusals, m -> unreferenced.incrementAndGet());
    ParameterServerGrpc.ParameterServerBlockingStub stub = stub();
    Future<PushGradientsResponse> held = pushInBackground(stub, 3 << 20);
    Poll.until(Duration.ofSeconds(20), () -> pushesSeen.get() == 1, "the first push in service");

    assertThatThrownBy(() -> stub.pushGradients(push(40 << 20)))
        .satisfies(e -> assertOverloaded(e, CallLimits.BYTES));
    assertThat(refusals.count(CallLimits.BYTES)).isEqualTo(1.0);
    assertThat(pushesSeen.get()).isEqualTo(1);
    assertThat(unreferenced.get()).as("the refused request was never whole").isZero();
    Poll.until(
        Duration.ofSeconds(20),
        () -> limits.queuedBytes() < (4 << 20),
        "the refused call's bytes given back");

    release.countDown();
    assertThat(held.get(20, TimeUnit.SECONDS)).isNotNull();
    Poll.until(Duration.ofSeconds(20), () -> limits.queuedBytes() == 0, "bytes given back");
    assertThat(stub.pushGradients(push(6 << 20))).isNotNull();
    assertThat(limits.queuedBytes()).isZero();
  }
}
