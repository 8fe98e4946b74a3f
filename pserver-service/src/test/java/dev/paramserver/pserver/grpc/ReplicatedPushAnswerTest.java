package dev.paramserver.pserver.grpc;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import com.google.common.util.concurrent.ListenableFuture;
import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.shard.AsyncPushes;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.grpc.InProcessGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A push that waits only for its backup is applied on the transport thread and answered when the
 * backup acknowledged it ({@link Replica#settleAsync}), never before, and no thread blocks in
 * {@link Replica#settle} meanwhile; a refused settle is the push's error.
 */
class ReplicatedPushAnswerTest {
  private static final ParameterSpec W = dense("fc1.w", 2, 2, sgd(1f));

  /** A backup whose acknowledgements the test gives, one per push, in order. */
  private static final class HeldReplica implements Replica {
    final LinkedBlockingQueue<WalRecord> appended = new LinkedBlockingQueue<>();
    final LinkedBlockingQueue<CompletableFuture<Void>> settling = new LinkedBlockingQueue<>();
    final List<String> blockingSettles = new CopyOnWriteArrayList<>();

    @Override
    public void append(WalRecord record) {
      appended.add(record);
    }

    @Override
    public void settle() {
      blockingSettles.add(Thread.currentThread().getName());
    }

    @Override
    public CompletableFuture<Void> settleAsync(Executor blocking) {
      CompletableFuture<Void> f = new CompletableFuture<>();
      settling.add(f);
      return f;
    }

    CompletableFuture<Void> next() throws InterruptedException {
      CompletableFuture<Void> f = settling.poll(5, TimeUnit.SECONDS);
      assertThat(f).as("a push settling with the backup").isNotNull();
      return f;
    }
  }

  @RegisterExtension final InProcessGrpc grpc = new InProcessGrpc();

  private ManagedChannel channel;
  private ParameterShard shard;
  private HeldReplica replica;

  @BeforeEach
  void start() {
    ExecutorService executor = Executors.newCachedThreadPool();
    grpc.afterServers(executor::shutdownNow);
    shard = new ParameterShard(true);
    channel = grpc.start(TestServices.parameterServer(shard, executor));
    ParameterServerGrpc.ParameterServerBlockingStub stub =
        ParameterServerGrpc.newBlockingStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
    stub.initParameters(init("i1", List.of(W), List.of(block("fc1.w", 0, 2, 1, 2))));
    stub.finishInit(finish("i1", 1));
    replica = new HeldReplica();
    shard.attachReplica(replica);
  }

  private ParameterServerGrpc.ParameterServerFutureStub future() {
    return ParameterServerGrpc.newFutureStub(channel).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  @Test
  void push_isAppliedAtOnce_andAnsweredOnlyOnceTheBackupAcknowledgedIt() throws Exception {
    assertThat(AsyncPushes.eligible(shard)).isTrue();
    ListenableFuture<PushGradientsResponse> answer =
        future().pushGradients(push(gradient("fc1.w", 0, 1, 1)));
    CompletableFuture<Void> settling = replica.next();
    assertThat(replica.appended).hasSize(1);
    assertThat(shard.step()).as("applied before the backup answered").isEqualTo(1);
    assertThat(answer.isDone()).as("answered before the backup acknowledged").isFalse();

    settling.complete(null);
    assertThat(answer.get(5, TimeUnit.SECONDS).getStep()).isEqualTo(1);
    assertThat(replica.blockingSettles).as("threads that waited in settle").isEmpty();
  }

  @Test
  void refusedSettle_isThePushsError() throws Exception {
    ListenableFuture<PushGradientsResponse> answer =
        future().pushGradients(push(gradient("fc1.w", 0, 1, 1)));
    replica
        .next()
        .completeExceptionally(
            new ServiceException(ErrorReason.SHUTTING_DOWN, "pserver 0 lost its lease: retry"));
    Throwable t = catchThrowable(() -> answer.get(5, TimeUnit.SECONDS));
    assertThat(t).isInstanceOf(ExecutionException.class);
    assertThat(RpcErrors.codeOf(t.getCause())).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(RpcErrors.reasonOf(t.getCause())).isEqualTo(ErrorReason.SHUTTING_DOWN);
    assertThat(t.getCause()).hasMessageContaining("lost its lease");
  }

  @Test
  void streamedPushes_nextIsReadOnlyOnceTheOneBeforeWasAcknowledged() throws Exception {
    CopyOnWriteArrayList<PushGradientsResponse> responses = new CopyOnWriteArrayList<>();
    CompletableFuture<Throwable> end = new CompletableFuture<>();
    StreamObserver<PushGradientsRequest> in =
        ParameterServerGrpc.newStub(channel)
            .streamPushes(
                new StreamObserver<>() {
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
                });
    in.onNext(push(gradient("fc1.w", 0, 1, 1)));
    in.onNext(push(gradient("fc1.w", 0, 1, 1)));
    in.onCompleted();

    CompletableFuture<Void> first = replica.next();
    assertThat(replica.settling.poll(200, TimeUnit.MILLISECONDS))
        .as("the second push, read before the first was acknowledged")
        .isNull();
    assertThat(responses).isEmpty();
    first.complete(null);
    replica.next().complete(null);

    assertThat(end.get(5, TimeUnit.SECONDS)).as("the stream's end").isNull();
    assertThat(responses).extracting(PushGradientsResponse::getStep).containsExactly(1L, 2L);
    assertThat(replica.blockingSettles).isEmpty();
  }
}
