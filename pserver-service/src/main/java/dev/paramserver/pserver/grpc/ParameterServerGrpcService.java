package dev.paramserver.pserver.grpc;

import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.FinishInitResponse;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.InitParametersResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.AsyncPushes;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.Offload;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.service.MetricBuckets;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import net.devh.boot.grpc.server.service.GrpcService;
import org.springframework.beans.factory.annotation.Qualifier;

/**
 * The ParameterServer gRPC service: converts requests to calls on {@link ParameterShard}. Errors
 * thrown inline are mapped by {@link ErrorMappingInterceptor}; calls that may block (synchronous
 * modes wait for a step) run on {@code blockingExecutor}, never on a gRPC thread, and map their
 * errors the same way.
 */
@GrpcService
public final class ParameterServerGrpcService extends ParameterServerGrpc.ParameterServerImplBase {
  private final ParameterShard shard;
  private final ShardLifecycle lifecycle;
  private final Executor blockingExecutor;
  private final Counter pushedBytes;
  private final Counter pulledBytes;
  private final Timer pushTimer;
  private final ShardTraffic traffic;
  private final AdminAddress adminAddress;

  public ParameterServerGrpcService(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      @Qualifier("pserverBlockingExecutor") Executor blockingExecutor,
      MeterRegistry registry,
      ShardTraffic traffic,
      AdminAddress adminAddress) {
    this.shard = shard;
    this.lifecycle = lifecycle;
    this.traffic = traffic;
    this.adminAddress = adminAddress;
    this.blockingExecutor = blockingExecutor;
    this.pushedBytes =
        Counter.builder("paramserver.pserver.pushed.bytes")
            .description("Bytes of gradient pushes received")
            .baseUnit("bytes")
            .register(registry);
    this.pulledBytes =
        Counter.builder("paramserver.pserver.pulled.bytes")
            .description("Bytes of parameters sent in pulls")
            .baseUnit("bytes")
            .register(registry);
    this.pushTimer =
        Timer.builder("paramserver.pserver.push.apply")
            .description("Time to validate and apply a push (sync modes: including the barrier)")
            .serviceLevelObjectives(MetricBuckets.latency())
            .register(registry);
  }

  private PushGradientsResponse timedPush(PushGradientsRequest request) {
    pushedBytes.increment(request.getSerializedSize());
    long start = System.nanoTime();
    try {
      return response(request, shard.pushOutcome(request));
    } finally {
      timed(start);
    }
  }

  /**
   * {@link #timedPush} for a push that waits only for its backup ({@link AsyncPushes#eligible}):
   * applied on this transport thread, answered from the thread that receives the backup's
   * acknowledgement; no thread is held meanwhile. A push refused before it was applied throws here,
   * as {@code timedPush} does.
   */
  private CompletableFuture<PushGradientsResponse> timedPushAsync(PushGradientsRequest request) {
    pushedBytes.increment(request.getSerializedSize());
    long start = System.nanoTime();
    CompletableFuture<PushOutcome> outcome;
    try {
      outcome = AsyncPushes.pushOutcome(shard, request, blockingExecutor);
    } catch (RuntimeException e) {
      timed(start);
      throw e;
    }
    return outcome.thenApply(r -> response(request, r)).whenComplete((r, e) -> timed(start));
  }

  private PushGradientsResponse response(PushGradientsRequest request, PushOutcome r) {
    PushGradientsResponse.Builder out =
        PushGradientsResponse.newBuilder().setStep(r.step()).setDuplicate(r.duplicate());
    if (request.getReturnValues() && request.getGradientsCount() > 0) {
      out.addAllBlocks(shard.valuesAfter(request, r.step()));
    }
    PushGradientsResponse response = out.build();
    if (response.getBlocksCount() > 0) {
      pulledBytes.increment(response.getSerializedSize());
      traffic.pull();
    }
    return response;
  }

  private void timed(long start) {
    long nanos = System.nanoTime() - start;
    pushTimer.record(nanos, TimeUnit.NANOSECONDS);
    traffic.push(nanos);
  }

  private PullParametersResponse countedPull(PullParametersRequest request) {
    PullParametersResponse r = shard.pull(request);
    pulledBytes.increment(r.getSerializedSize());
    traffic.pull();
    return r;
  }

  @Override
  public void initParameters(
      InitParametersRequest request, StreamObserver<InitParametersResponse> out) {
    int blocks = shard.init(request);
    reply(out, InitParametersResponse.newBuilder().setBlocks(blocks).build());
  }

  @Override
  public void finishInit(FinishInitRequest request, StreamObserver<FinishInitResponse> out) {
    // Off the transport thread: a freshly initialised shard is checkpointed before the answer.
    offload(
        "FinishInit",
        out,
        () -> {
          shard.finishInit(request);
          return FinishInitResponse.getDefaultInstance();
        });
  }

  @Override
  public void pushGradients(
      PushGradientsRequest request, StreamObserver<PushGradientsResponse> out) {
    if (!shard.pushMayBlock()) {
      reply(out, timedPush(request));
    } else if (AsyncPushes.eligible(shard)) {
      Offload.complete(
          timedPushAsync(request), ParameterServerGrpc.SERVICE_NAME + "/PushGradients", out);
    } else {
      offload("PushGradients", out, () -> timedPush(request));
    }
  }

  /** Pushes on one stream, in order (see {@link PushStream}). */
  @Override
  public StreamObserver<PushGradientsRequest> streamPushes(
      StreamObserver<PushGradientsResponse> out) {
    return new PushStream(
        (ServerCallStreamObserver<PushGradientsResponse>) out,
        this::timedPush,
        shard::pushMayBlock,
        this::timedPushAsync,
        () -> AsyncPushes.eligible(shard),
        blockingExecutor);
  }

  @Override
  public void pullParameters(
      PullParametersRequest request, StreamObserver<PullParametersResponse> out) {
    if (shard.mode() == TrainingMode.ASYNC || request.getMinStep() <= shard.step()) {
      reply(out, countedPull(request));
    } else {
      offload("PullParameters", out, () -> countedPull(request));
    }
  }

  @Override
  public void getShardStatus(GetShardStatusRequest request, StreamObserver<ShardStatus> out) {
    reply(out, lifecycle.status().toBuilder().setAdminAddress(adminAddress.get()).build());
  }

  private static <T> void reply(StreamObserver<T> out, T value) {
    out.onNext(value);
    out.onCompleted();
  }

  private <T> void offload(String method, StreamObserver<T> out, Supplier<T> work) {
    Offload.run(blockingExecutor, ParameterServerGrpc.SERVICE_NAME + "/" + method, out, work);
  }
}
