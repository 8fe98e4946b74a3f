package dev.paramserver.pserver;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.pserver.registration.ShardRegistration;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A pserver registered through a real etcd as index 1 of 2 refuses a client that routes sparse rows
 * wrongly on purpose (raw gRPC stubs): WRONG_SHARD naming the rule's owner, nothing applied or
 * created, while correctly routed pushes and pulls go on.
 */
class WrongShardRoutingTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final String TABLE = "emb";
  private static final int WIDTH = 4;
  private static final int PSERVERS = 2;
  private static final int INDEX = 1;

  private Path checkpoints;
  private EtcdCoordinator coordinator;
  private String job;

  @BeforeEach
  void setUp() {
    checkpoints = TempDirs.create("wrong-shard-ckpt");
    job = etcd.uniqueJob();
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(checkpoints);
  }

  private ConfigurableApplicationContext start() {
    return new SpringApplicationBuilder(PserverApplication.class)
        .run(
            "--server.port=0",
            "--server.address=127.0.0.1",
            "--spring.grpc.server.port=0",
            "--spring.grpc.server.address=127.0.0.1",
            "--paramserver.etcd.endpoints=" + etcd.endpoint(),
            "--paramserver.job=" + job,
            "--paramserver.admin.token=tok",
            "--paramserver.pserver.checkpoint-dir=" + checkpoints,
            "--paramserver.pserver.checkpoint-interval=0s",
            "--paramserver.pserver.desired=" + PSERVERS,
            "--paramserver.pserver.index=" + INDEX);
  }

  /** The first id from {@code from} on that the routing rule sends to {@code owner}. */
  private static long rowOf(int owner, long from) {
    long id = from;
    while (ShardPlacement.ownerOfRow(TABLE, id, PSERVERS) != owner) {
      id++;
    }
    return id;
  }

  private static PushGradientsRequest push(long step, long... ids) {
    float[] g = new float[ids.length * WIDTH];
    Arrays.fill(g, 0.5f);
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(TABLE)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(g));
    Arrays.stream(ids).forEach(rows::addRowIds);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t0")
        .setSession("s7")
        .setStep(step)
        .addSparseGradients(rows)
        .build();
  }

  private static PullParametersRequest pull(long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(TABLE);
    Arrays.stream(ids).forEach(ref::addRowIds);
    return PullParametersRequest.newBuilder().addSparseRows(ref).build();
  }

  private static void assertWrongShard(Throwable t, long row) {
    assertThat(t).isInstanceOf(StatusRuntimeException.class);
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.WRONG_SHARD);
    assertThat(RpcErrors.metadataOf(t))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "owner", Integer.toString(ShardPlacement.ownerOfRow(TABLE, row, PSERVERS)),
                "row", Long.toString(row),
                "table", TABLE,
                "pservers", Integer.toString(PSERVERS),
                "index", Integer.toString(INDEX)));
    assertThat(Status.fromThrowable(t).getDescription())
        .contains("sparse table 'emb' row " + row + " belongs to pserver 0 of 2")
        .contains("not to this pserver (1)");
  }

  @Test
  void wronglyRoutedPushesAndPulls_areRefusedWithWrongShard_andChangeNothing() throws Exception {
    try (ConfigurableApplicationContext ctx = start()) {
      ShardRegistration registration = ctx.getBean(ShardRegistration.class);
      Poll.until(
          Duration.ofSeconds(20), () -> registration.index() == INDEX, "index 1 claimed in etcd");
      ManagedChannel channel =
          Channels.forAddress(
              coordinator.kv().get(coordinator.keys().ps(INDEX)).orElseThrow().valueAsString());
      try {
        var stub = ParameterServerGrpc.newBlockingStub(channel);
        ParameterSpec emb =
            ParameterSpec.newBuilder()
                .setName(TABLE)
                .addShape(0)
                .addShape(WIDTH)
                .setDtype(DataType.FLOAT32)
                .setSparse(true)
                .setInitStddev(0.1f)
                .setOptimizer(sgd(1))
                .build();
        Poll.until(
            Duration.ofSeconds(20),
            () -> {
              try {
                stub.withDeadlineAfter(5, TimeUnit.SECONDS)
                    .initParameters(init("i1", List.of(emb), List.of()));
                return true;
              } catch (StatusRuntimeException e) {
                // UNAVAILABLE while the claimed index's (absent) checkpoint is looked for
                return false;
              }
            },
            "InitParameters accepted");
        stub.withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(finish("i1", 0));

        long mine = rowOf(INDEX, 1);
        long theirs = rowOf(0, 1);
        float[] before =
            TensorCodec.decode(
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .pullParameters(pull(mine))
                    .getSparseRows(0)
                    .getData());
        ShardStatus statusBefore =
            stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .getShardStatus(GetShardStatusRequest.getDefaultInstance());

        // unary push: one owned row, then one of pserver 0
        assertWrongShard(
            catchThrowableOfType(
                StatusRuntimeException.class,
                () ->
                    stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .pushGradients(push(1, mine, theirs))),
            theirs);
        // a push on a StreamPushes stream
        CompletableFuture<Throwable> streamed = new CompletableFuture<>();
        StreamObserver<PushGradientsRequest> stream =
            ParameterServerGrpc.newStub(channel)
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .streamPushes(
                    new StreamObserver<>() {
                      @Override
                      public void onNext(PushGradientsResponse value) {
                        streamed.completeExceptionally(
                            new AssertionError("a wrongly routed push was acknowledged: " + value));
                      }

                      @Override
                      public void onError(Throwable t) {
                        streamed.complete(t);
                      }

                      @Override
                      public void onCompleted() {
                        streamed.completeExceptionally(new AssertionError("stream completed"));
                      }
                    });
        stream.onNext(push(1, theirs));
        try {
          assertWrongShard(streamed.get(10, TimeUnit.SECONDS), theirs);
        } finally {
          stream.onCompleted();
        }
        // pulls
        assertWrongShard(
            catchThrowableOfType(
                StatusRuntimeException.class,
                () ->
                    stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .pullParameters(pull(mine, theirs))),
            theirs);

        // nothing was applied or created
        ShardStatus statusAfter =
            stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .getShardStatus(GetShardStatusRequest.getDefaultInstance());
        assertThat(statusAfter.getStep()).isEqualTo(statusBefore.getStep()).isZero();
        assertThat(statusAfter.getParameterBytes()).isEqualTo(statusBefore.getParameterBytes());
        assertThat(
                TensorCodec.decode(
                    stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                        .pullParameters(pull(mine))
                        .getSparseRows(0)
                        .getData()))
            .containsExactly(before);

        // correctly routed: the same step pushed with only the owned row is applied
        assertThat(
                stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(1, mine)).getStep())
            .isEqualTo(1);
        float[] after =
            TensorCodec.decode(
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .pullParameters(pull(mine))
                    .getSparseRows(0)
                    .getData());
        for (int i = 0; i < WIDTH; i++) {
          assertThat(after[i]).isEqualTo(before[i] - 0.5f);
        }
        assertThat(
                stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .getShardStatus(GetShardStatusRequest.getDefaultInstance())
                    .getParameterBytes())
            .isGreaterThan(statusBefore.getParameterBytes());
      } finally {
        Channels.close(channel);
      }
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    }
  }
}
