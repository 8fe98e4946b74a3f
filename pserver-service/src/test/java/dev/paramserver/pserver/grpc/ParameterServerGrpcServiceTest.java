package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pull;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ParameterServerGrpcServiceTest {
  private static final ParameterSpec W = dense("fc1.w", 6, 4, sgd(1f));

  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();

  private ManagedChannel channel;
  private ParameterServerGrpc.ParameterServerBlockingStub stub;

  @BeforeEach
  void start() {
    ExecutorService executor = Executors.newCachedThreadPool();
    grpc.afterServers(executor::shutdownNow);
    ParameterShard shard = new ParameterShard(true);
    channel = grpc.start(TestServices.parameterServer(shard, executor));
    stub = ParameterServerGrpc.newBlockingStub(channel);
  }

  private ParameterServerGrpc.ParameterServerBlockingStub stub() {
    return stub.withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  private void initialise() {
    assertThat(
            stub()
                .initParameters(
                    init(
                        "i1",
                        List.of(W),
                        List.of(block("fc1.w", 0, 4, 1, 2, 3, 4), block("fc1.w", 1, 4, 5, 6))))
                .getBlocks())
        .isEqualTo(2);
    stub().finishInit(finish("i1", 2));
  }

  private void assertFails(Runnable call, Status.Code code, ErrorReason reason, String text) {
    Throwable t = catchThrowable(call::run);
    assertThat(RpcErrors.codeOf(t)).isEqualTo(code);
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(reason);
    assertThat(t).hasMessageContaining(text);
  }

  @Test
  void pushBeforeInit_isFailedPreconditionNotInitialized() {
    assertFails(
        () -> stub().pushGradients(push(gradient("fc1.w", 0, 1, 1, 1, 1))),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_INITIALIZED,
        "call InitParameters and FinishInit first");
    assertFails(
        () -> stub().pullParameters(pullAll()),
        Status.Code.FAILED_PRECONDITION,
        ErrorReason.NOT_INITIALIZED,
        "FinishInit");
  }

  @Test
  void pushThenPull_overGrpc_appliesSgd() {
    initialise();
    assertThat(stub().pushGradients(push(gradient("fc1.w", 1, 0.5f, -1))).getStep()).isEqualTo(1);
    PullParametersResponse r = stub().pullParameters(pullAll());
    assertThat(r.getStep()).isEqualTo(1);
    assertThat(TensorCodec.decode(r.getBlocks(1).getData())).containsExactly(4.5f, 7f);
    assertThat(stub().getShardStatus(GetShardStatusRequest.getDefaultInstance()).getInitialised())
        .isTrue();
  }

  @Test
  void badInputs_mapToChosenCodesAndReasons() {
    initialise();
    assertFails(
        () -> stub().pushGradients(push(gradient("fc1.w", 0, 1, 1, 1))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.SHAPE_MISMATCH,
        "parameter 'fc1.w' block 0 expects 4 float32 values, got 3");
    assertFails(
        () -> stub().pushGradients(push(gradient("fc2.w", 0, 1))),
        Status.Code.NOT_FOUND,
        ErrorReason.UNKNOWN_PARAMETER,
        "parameter 'fc2.w'");
    assertFails(
        () -> stub().pushGradients(push(gradient("fc1.w", 1, Float.NaN, 1))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.NON_FINITE_GRADIENT,
        "NaN");
    assertFails(
        () -> stub().initParameters(init("i1", List.of(dense("fc1.w", 7, 4, sgd(1f))), List.of())),
        Status.Code.ALREADY_EXISTS,
        ErrorReason.INIT_CONFLICT,
        "fc1.w");
    assertThat(stub().getShardStatus(GetShardStatusRequest.getDefaultInstance()).getStep())
        .isZero();
  }

  @Test
  void badOptimizer_isInvalidArgumentBadOptimizer_namingTheParameterAndTheField() {
    assertFails(
        () -> stub().initParameters(init("i1", List.of(dense("fc1.w", 6, 4, sgd(-1f))), List.of())),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.BAD_OPTIMIZER,
        "parameter 'fc1.w' optimizer SGD needs learning_rate > 0, got -1.0");
  }

  /** The answers of one StreamPushes call, and how it ended. */
  private static final class Answers implements StreamObserver<PushGradientsResponse> {
    final List<PushGradientsResponse> responses = new CopyOnWriteArrayList<>();
    final CompletableFuture<Throwable> end = new CompletableFuture<>();

    @Override
    public void onNext(PushGradientsResponse r) {
      responses.add(r);
    }

    @Override
    public void onError(Throwable t) {
      end.complete(t);
    }

    @Override
    public void onCompleted() {
      end.complete(null);
    }
  }

  private static PushGradientsRequest windowed(long step, float g, String name) {
    return push(gradient(name, 1, g, g)).toBuilder()
        .setTrainerId("t")
        .setSession("s")
        .setStep(step)
        .setAcknowledgedThrough(0)
        .setReturnValues(true)
        .build();
  }

  private float[] block1() {
    return TensorCodec.decode(stub().pullParameters(pullAll()).getBlocks(1).getData());
  }

  @Test
  void streamedPushes_sentWithoutWaiting_areAppliedAndAnsweredInOrder() throws Exception {
    initialise();
    Answers answers = new Answers();
    StreamObserver<PushGradientsRequest> in =
        ParameterServerGrpc.newStub(channel).streamPushes(answers);
    for (int i = 1; i <= 5; i++) {
      in.onNext(windowed(i, 1, "fc1.w"));
    }
    in.onCompleted();

    assertThat(answers.end.get(5, TimeUnit.SECONDS)).as("the stream's end").isNull();
    assertThat(answers.responses)
        .extracting(PushGradientsResponse::getStep)
        .containsExactly(1L, 2L, 3L, 4L, 5L);
    assertThat(answers.responses).noneMatch(PushGradientsResponse::getDuplicate);
    assertThat(TensorCodec.decode(answers.responses.get(4).getBlocks(0).getData()))
        .as("the values after the last push")
        .containsExactly(0f, 1f);
    assertThat(block1()).containsExactly(0f, 1f);

    // the same identities again, on a new stream: duplicates, nothing applied twice
    Answers again = new Answers();
    StreamObserver<PushGradientsRequest> in2 =
        ParameterServerGrpc.newStub(channel).streamPushes(again);
    in2.onNext(windowed(3, 1, "fc1.w"));
    in2.onCompleted();
    assertThat(again.end.get(5, TimeUnit.SECONDS)).isNull();
    assertThat(again.responses)
        .singleElement()
        .extracting(PushGradientsResponse::getDuplicate)
        .isEqualTo(true);
    assertThat(block1()).containsExactly(0f, 1f);
  }

  @Test
  void firstRefusedStreamedPush_endsTheStreamWithItsReason_andNothingAfterItIsApplied()
      throws Exception {
    initialise();
    Answers answers = new Answers();
    StreamObserver<PushGradientsRequest> in =
        ParameterServerGrpc.newStub(channel).streamPushes(answers);
    in.onNext(windowed(1, 1, "fc1.w"));
    in.onNext(windowed(2, 1, "fc2.w"));
    in.onNext(windowed(3, 1, "fc1.w"));
    in.onCompleted();

    Throwable end = answers.end.get(5, TimeUnit.SECONDS);
    assertThat(RpcErrors.codeOf(end)).isEqualTo(Status.Code.NOT_FOUND);
    assertThat(RpcErrors.reasonOf(end)).isEqualTo(ErrorReason.UNKNOWN_PARAMETER);
    assertThat(end).hasMessageContaining("fc2.w");
    assertThat(answers.responses).hasSize(1);
    assertThat(block1()).as("push 1 applied, push 3 not").containsExactly(4f, 5f);

    // push 3 resent on a new stream is applied: it was never taken for applied
    Answers resent = new Answers();
    StreamObserver<PushGradientsRequest> in2 =
        ParameterServerGrpc.newStub(channel).streamPushes(resent);
    in2.onNext(windowed(3, 1, "fc1.w").toBuilder().setAcknowledgedThrough(1).build());
    in2.onCompleted();
    assertThat(resent.end.get(5, TimeUnit.SECONDS)).isNull();
    assertThat(resent.responses)
        .singleElement()
        .extracting(PushGradientsResponse::getDuplicate)
        .isEqualTo(false);
    assertThat(block1()).containsExactly(3f, 4f);
  }

  private static PushGradientsRequest pullOnStream(PullParametersRequest pull) {
    return PushGradientsRequest.newBuilder().setPull(pull).build();
  }

  @Test
  void pullsOnAPushStream_areAnsweredInTurn_andADeclinedOneLeavesTheStreamGoing() throws Exception {
    initialise();
    Answers answers = new Answers();
    StreamObserver<PushGradientsRequest> in =
        ParameterServerGrpc.newStub(channel).streamPushes(answers);
    in.onNext(windowed(1, 1, "fc1.w"));
    in.onNext(pullOnStream(pull("fc1.w", 1)));
    in.onNext(pullOnStream(pull("fc9.w", 0)));
    in.onNext(windowed(2, 1, "fc1.w"));
    in.onNext(pullOnStream(pull("fc1.w", 1)));
    in.onCompleted();

    assertThat(answers.end.get(5, TimeUnit.SECONDS)).as("the stream's end").isNull();
    List<PushGradientsResponse> r = answers.responses;
    assertThat(r).hasSize(5);
    assertThat(r.get(0).getServesPulls()).as("a push answer on a stream says it").isTrue();
    assertThat(r.get(0).hasPulled()).isFalse();
    assertThat(r.get(1).getPulled().getStep()).as("read after push 1").isEqualTo(1);
    assertThat(TensorCodec.decode(r.get(1).getPulled().getBlocks(0).getData()))
        .containsExactly(4f, 5f);
    assertThat(r.get(2).hasPulled()).isFalse();
    assertThat(r.get(2).getPullDeclined()).as("declined, naming why").contains("fc9.w");
    assertThat(r.get(3).getStep()).as("push 2 applied after the declined pull").isEqualTo(2);
    assertThat(r.get(4).getPulled().getStep()).isEqualTo(2);
    assertThat(TensorCodec.decode(r.get(4).getPulled().getBlocks(0).getData()))
        .containsExactly(3f, 4f);
    assertThat(stub().pushGradients(windowed(3, 1, "fc1.w")).getServesPulls())
        .as("a unary push's answer says nothing of streams")
        .isFalse();
  }

  @Test
  void aPullWithAnythingElse_endsTheStream_andPushGradientsRefusesAPull() throws Exception {
    initialise();
    Answers answers = new Answers();
    StreamObserver<PushGradientsRequest> in =
        ParameterServerGrpc.newStub(channel).streamPushes(answers);
    in.onNext(windowed(1, 1, "fc1.w").toBuilder().setPull(pull("fc1.w", 1)).build());
    in.onCompleted();
    Throwable end = answers.end.get(5, TimeUnit.SECONDS);
    assertThat(RpcErrors.reasonOf(end)).isEqualTo(ErrorReason.BAD_ARGUMENT);
    assertThat(end).hasMessageContaining("carries nothing else").hasMessageContaining("step 1");
    assertThat(block1()).as("nothing applied").containsExactly(5f, 6f);

    assertFails(
        () -> stub().pushGradients(pullOnStream(pull("fc1.w", 1))),
        Status.Code.INVALID_ARGUMENT,
        ErrorReason.BAD_ARGUMENT,
        "PushGradients does not serve it");
  }
}
