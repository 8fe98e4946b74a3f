package dev.paramserver.pserver.grpc;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
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
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.AnswerArrays;
import dev.paramserver.pserver.shard.AsyncPushes;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.pserver.shard.ShardMoves;
import dev.paramserver.pserver.shard.ShardTraffic;
import dev.paramserver.rpc.ErrorMappingInterceptor;
import dev.paramserver.rpc.LendingMarshaller;
import dev.paramserver.rpc.Offload;
import dev.paramserver.rpc.ZeroCopyMarshaller;
import dev.paramserver.rpc.ZeroCopyServices;
import dev.paramserver.service.AdminAddress;
import dev.paramserver.service.MetricBuckets;
import io.grpc.BindableService;
import io.grpc.ServerServiceDefinition;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.grpc.server.service.GrpcService;

/**
 * The ParameterServer gRPC service: converts requests to calls on {@link ParameterShard}. Errors
 * thrown inline are mapped by {@link ErrorMappingInterceptor}; calls that may block (synchronous
 * modes wait for a step) run on {@code blockingExecutor}, never on a gRPC thread, and map their
 * errors the same way.
 *
 * <p>With {@code paramserver.pserver.zero-copy} (the default) the tensor-carrying requests
 * (PushGradients, StreamPushes, InitParameters) are parsed by a {@link ZeroCopyMarshaller}: their
 * tensor bytes are views of the received buffers, released once the push was applied, logged and
 * answered (or refused).
 */
@GrpcService
public final class ParameterServerGrpcService
    implements ParameterServerGrpc.AsyncService, BindableService {
  private final ParameterShard shard;
  // a pull of slots moving here waits for the move's commit: off the transport thread
  private final ShardMoves moves;
  private final ShardLifecycle lifecycle;
  private final Executor blockingExecutor;
  private final Counter pushedBytes;
  private final Counter pulledBytes;
  private final Counter answerRowsListed;
  private final Counter answerRowsLeftOut;
  private final Timer pushTimer;
  private final ShardTraffic traffic;
  private final AdminAddress adminAddress;
  private final boolean zeroCopy;
  private final ZeroCopyMarshaller<PushGradientsRequest> pushes;
  private final ZeroCopyMarshaller<InitParametersRequest> inits;
  // answers whose rows are views of the shard's pooled arrays, given back once written
  private final LendingMarshaller<PushGradientsResponse> answers;
  // pulls, by PullParameters and on push streams
  private final ShardPulls pulls;

  /** With zero-copy parsing on (tests). */
  public ParameterServerGrpcService(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      Executor blockingExecutor,
      MeterRegistry registry,
      ShardTraffic traffic,
      AdminAddress adminAddress) {
    this(shard, lifecycle, blockingExecutor, registry, traffic, adminAddress, true);
  }

  @Autowired
  public ParameterServerGrpcService(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      @Qualifier("pserverBlockingExecutor") Executor blockingExecutor,
      MeterRegistry registry,
      ShardTraffic traffic,
      AdminAddress adminAddress,
      PserverProperties properties) {
    this(
        shard, lifecycle, blockingExecutor, registry, traffic, adminAddress, properties.zeroCopy());
  }

  /**
   * @param zeroCopy parse the tensor-carrying requests without copying their bytes ({@link
   *     ZeroCopyMarshaller}); false: the stock marshaller
   */
  public ParameterServerGrpcService(
      ParameterShard shard,
      ShardLifecycle lifecycle,
      Executor blockingExecutor,
      MeterRegistry registry,
      ShardTraffic traffic,
      AdminAddress adminAddress,
      boolean zeroCopy) {
    this.zeroCopy = zeroCopy;
    this.pushes =
        new ZeroCopyMarshaller<>(
            PushGradientsRequest.getDefaultInstance(), parses(registry, "PushGradientsRequest"));
    this.inits =
        new ZeroCopyMarshaller<>(
            InitParametersRequest.getDefaultInstance(), parses(registry, "InitParametersRequest"));
    this.answers =
        new LendingMarshaller<>(
            PushGradientsResponse.getDefaultInstance(), a -> AnswerArrays.giveBack(shard, a));
    this.shard = shard;
    this.moves = new ShardMoves(shard);
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
    this.pulls = new ShardPulls(shard, moves, traffic, zeroCopy, registry, pulledBytes, answers);
    this.answerRowsListed =
        rows(registry, "paramserver.pserver.answer.rows", ANSWER_ROWS, "listed");
    this.answerRowsLeftOut =
        rows(registry, "paramserver.pserver.answer.rows", ANSWER_ROWS, "left_out");
    this.pushTimer =
        Timer.builder("paramserver.pserver.push.apply")
            .description("Time to validate and apply a push (sync modes: including the barrier)")
            .serviceLevelObjectives(MetricBuckets.latency())
            .register(registry);
  }

  private static ZeroCopyMarshaller.ParseListener parses(MeterRegistry registry, String message) {
    Counter zero =
        Counter.builder("paramserver.pserver.zero.copy.parses")
            .description("Requests parsed as views of the received buffers")
            .tag("message", message)
            .register(registry);
    Counter stock =
        Counter.builder("paramserver.pserver.zero.copy.fallbacks")
            .description(
                "Requests parsed by copying (the transport did not expose its buffers, or"
                    + " zero-copy parsing is off)")
            .tag("message", message)
            .register(registry);
    return zeroCopy -> (zeroCopy ? zero : stock).increment();
  }

  /**
   * The service with the zero-copy request marshallers, the handlers unchanged; the stock
   * definition when {@code zero-copy} is off.
   */
  @Override
  public ServerServiceDefinition bindService() {
    ServerServiceDefinition stock = ParameterServerGrpc.bindService(this);
    if (!zeroCopy) {
      return stock;
    }
    return ZeroCopyServices.rebind(
        stock,
        List.of(
            new ZeroCopyServices.Rebinding(
                ParameterServerGrpc.getPushGradientsMethod().getFullMethodName(), pushes, answers),
            new ZeroCopyServices.Rebinding(
                ParameterServerGrpc.getStreamPushesMethod().getFullMethodName(), pushes, answers),
            new ZeroCopyServices.Rebinding(
                ParameterServerGrpc.getInitParametersMethod().getFullMethodName(), inits),
            new ZeroCopyServices.Rebinding(
                ParameterServerGrpc.getPullParametersMethod().getFullMethodName(),
                null,
                pulls.marshaller())));
  }

  /**
   * Releases a request that an interceptor kept from the service (refused at a limit): its bytes
   * may be views of the transport's buffers. Any other message is ignored.
   */
  public void releaseUnreferenced(Object message) {
    if (message instanceof PushGradientsRequest p) {
      pushes.release(p);
    } else if (message instanceof InitParametersRequest i) {
      inits.release(i);
    }
  }

  /** Push requests parsed as views and not yet released (tests). */
  int heldRequests() {
    return pushes.held() + inits.held();
  }

  /** Answers lent pooled arrays and neither written nor forgotten (tests). */
  int lentAnswers() {
    return answers.lent() + pulls.marshaller().lent();
  }

  private PushGradientsResponse timedPush(PushGradientsRequest request) {
    return timedPush(request, false);
  }

  /**
   * @param streamed on a push stream: the answer says this server serves pulls there
   */
  private PushGradientsResponse timedPush(PushGradientsRequest request, boolean streamed) {
    refusePull(request);
    pushedBytes.increment(request.getSerializedSize());
    long start = System.nanoTime();
    try {
      return response(request, shard.pushOutcome(request), streamed);
    } finally {
      timed(start);
    }
  }

  /** A pull reaches a push's handler only by PushGradients, which does not serve it. */
  private static void refusePull(PushGradientsRequest request) {
    if (request.hasPull()) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "a PushGradientsRequest with pull is a pull on StreamPushes: PushGradients does not"
              + " serve it");
    }
  }

  /**
   * {@link #timedPush} for a push that waits only for its backup ({@link AsyncPushes#eligible}):
   * applied on this transport thread, answered from the thread that receives the backup's
   * acknowledgement; no thread is held meanwhile. A push refused before it was applied throws here,
   * as {@code timedPush} does.
   */
  private CompletableFuture<PushGradientsResponse> timedPushAsync(
      PushGradientsRequest request, boolean streamed) {
    refusePull(request);
    pushedBytes.increment(request.getSerializedSize());
    long start = System.nanoTime();
    CompletableFuture<PushOutcome> outcome;
    try {
      outcome = AsyncPushes.pushOutcome(shard, request, blockingExecutor);
    } catch (RuntimeException e) {
      timed(start);
      throw e;
    }
    return outcome
        .thenApply(r -> response(request, r, streamed))
        .whenComplete((r, e) -> timed(start));
  }

  // rows of pushes with a writer tag, listed in the answer or left out
  private static final String ANSWER_ROWS =
      "Rows of pushes with a writer tag: listed in the answer (another writer changed them last)"
          + " or left out (only that writer did)";

  static Counter rows(MeterRegistry registry, String name, String description, String rows) {
    return Counter.builder(name).description(description).tag("rows", rows).register(registry);
  }

  /**
   * Counts the rows of a push with a writer tag that its answer {@code rows} listed and left out.
   */
  private void countCut(PushGradientsRequest request, List<SparseRows> rows) {
    long pushed = 0;
    for (SparseRows g : request.getSparseGradientsList()) {
      pushed += g.getRowIdsCount();
    }
    long listed = 0;
    for (SparseRows a : rows) {
      listed += a.getRowIdsCount();
    }
    answerRowsListed.increment(listed);
    answerRowsLeftOut.increment(pushed - listed);
  }

  private PushGradientsResponse response(
      PushGradientsRequest request, PushOutcome r, boolean streamed) {
    PushGradientsResponse.Builder out =
        PushGradientsResponse.newBuilder()
            .setStep(r.step())
            .setDuplicate(r.duplicate())
            .setServesPulls(streamed);
    boolean blocks = request.getReturnValues() && request.getGradientsCount() > 0;
    boolean rows = request.getReturnRows() && request.getSparseGradientsCount() > 0;
    // the pooled arrays the answer's rows and blocks are views of
    List<byte[]> lent = r.lent();
    if (rows && r.rows() != null) {
      // read as they were updated, in the push's own probe of each row
      out.addAllSparseRows(r.rows()).setRowsChangedOnly(r.changedOnly());
      rows = false;
      if (r.changedOnly()) {
        countCut(request, r.rows());
      }
    }
    if (blocks || rows) {
      lent = new ArrayList<>(lent);
      PullParametersResponse after =
          zeroCopy
              ? AnswerArrays.valuesAfter(shard, request, r.step(), rows, lent)
              : shard.valuesAfter(request, r.step(), rows);
      out.addAllBlocks(after.getBlocksList()).addAllSparseRows(after.getSparseRowsList());
    }
    PushGradientsResponse response = out.build();
    boolean answered = response.getBlocksCount() > 0 || response.getSparseRowsCount() > 0;
    if (answered) {
      pulledBytes.increment(response.getSerializedSize());
      traffic.pull();
    }
    if (!lent.isEmpty()) {
      if (answered) {
        answers.lend(response, lent);
      } else {
        lent.forEach(a -> AnswerArrays.giveBack(shard, a));
      }
    }
    return response;
  }

  private void timed(long start) {
    long nanos = System.nanoTime() - start;
    pushTimer.record(nanos, TimeUnit.NANOSECONDS);
    traffic.push(nanos);
  }

  @Override
  public void initParameters(
      InitParametersRequest request, StreamObserver<InitParametersResponse> out) {
    int blocks;
    try {
      blocks = shard.init(request);
    } finally {
      inits.release(request);
    }
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
    // the request's bytes are released before its answer or error is sent, on every path
    StreamObserver<PushGradientsResponse> answer =
        ReleasingObserver.of(out, pushes, request, answers::forget);
    try {
      if (!shard.pushMayBlock()) {
        reply(answer, timedPush(request));
      } else if (AsyncPushes.eligible(shard)) {
        Offload.complete(
            timedPushAsync(request, false),
            ParameterServerGrpc.SERVICE_NAME + "/PushGradients",
            answer);
      } else {
        offload("PushGradients", answer, () -> timedPush(request));
      }
    } catch (RuntimeException e) {
      pushes.release(request);
      throw e;
    }
  }

  /** Pushes on one stream, in order (see {@link PushStream}). */
  @Override
  public StreamObserver<PushGradientsRequest> streamPushes(
      StreamObserver<PushGradientsResponse> out) {
    return new PushStream(
        (ServerCallStreamObserver<PushGradientsResponse>) out,
        r -> timedPush(r, true),
        pulls::onStream,
        shard::pushMayBlock,
        r -> timedPushAsync(r, true),
        () -> AsyncPushes.eligible(shard),
        blockingExecutor,
        pushes::release,
        answers::forget);
  }

  @Override
  public void pullParameters(
      PullParametersRequest request, StreamObserver<PullParametersResponse> answer) {
    // the loan of the answer's pooled arrays ends once its send call returned
    StreamObserver<PullParametersResponse> out =
        ReleasingObserver.sending(answer, pulls.marshaller()::forget);
    if (pulls.answersNow(request)) {
      reply(out, pulls.pull(request));
    } else {
      offload("PullParameters", out, () -> pulls.pull(request));
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
