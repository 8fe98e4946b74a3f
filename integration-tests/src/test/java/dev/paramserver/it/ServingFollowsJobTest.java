package dev.paramserver.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.LookupRequest;
import dev.paramserver.proto.v1.LookupResponse;
import dev.paramserver.proto.v1.MinVersion;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ServingGrpc;
import dev.paramserver.proto.v1.ServingStatusRequest;
import dev.paramserver.proto.v1.ShardPosition;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.serving.ServingApplication;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FreePorts;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * A serving replica follows a real pserver found through a real etcd (both Spring services, real
 * gRPC) while pushes are applied: a lookup with the min_version of a push's acknowledgement sees
 * that push, bit for bit the pserver's rows; versions only grow; bad requests get errors naming the
 * problem.
 */
@ExtendWith(PlainLogging.class)
class ServingFollowsJobTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private static final String TABLE = "emb";
  private static final int WIDTH = 4;

  private static ParameterSpec emb() {
    return ParameterSpec.newBuilder()
        .setName(TABLE)
        .addShape(0)
        .addShape(WIDTH)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(0.1f)
        .setOptimizer(
            OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.ADAM).setLearningRate(0.05f))
        .build();
  }

  private static PushGradientsRequest push(long step, long... ids) {
    float[] g = new float[ids.length * WIDTH];
    for (int i = 0; i < g.length; i++) {
      g[i] = 0.01f * (i + step);
    }
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(TABLE)
            .setDtype(DataType.FLOAT32)
            .setData(dev.paramserver.tensor.TensorCodec.encode(g));
    Arrays.stream(ids).forEach(rows::addRowIds);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("t0")
        .setSession("s1")
        .setStep(step)
        .addSparseGradients(rows)
        .build();
  }

  @Test
  void lookupWithThePushesMinVersion_seesThePush_asThePserverHoldsIt() throws Exception {
    String job = etcd.uniqueJob();
    Path checkpoints = TempDirs.create("serving-ckpt");
    int servingPort = FreePorts.next();
    ConfigurableApplicationContext pserver = null;
    ConfigurableApplicationContext serving = null;
    ManagedChannel ps = null;
    ManagedChannel sv = null;
    try (EtcdCoordinator coordinator =
        EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      pserver = ServingContexts.startPserver(coordinator, etcd.endpoint(), checkpoints);
      ps =
          Channels.forAddress(
              coordinator.kv().get(coordinator.keys().ps(0)).orElseThrow().valueAsString());
      var pstub = ParameterServerGrpc.newBlockingStub(ps);
      Poll.until(
          Duration.ofSeconds(20),
          () -> {
            try {
              pstub
                  .withDeadlineAfter(5, TimeUnit.SECONDS)
                  .initParameters(
                      InitParametersRequest.newBuilder()
                          .setTrainerId("t0")
                          .setInitId("i1")
                          .addParameters(emb())
                          .build());
              return true;
            } catch (StatusRuntimeException e) {
              return false; // UNAVAILABLE while the pserver looks for its checkpoint
            }
          },
          "InitParameters accepted");
      pstub
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i1").build());
      pstub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(1, 1, 2, 3));

      serving =
          new SpringApplicationBuilder(ServingApplication.class)
              .run(
                  "--server.port=0",
                  "--server.address=127.0.0.1",
                  "--spring.grpc.server.port=" + servingPort,
                  "--spring.grpc.server.address=127.0.0.1",
                  "--paramserver.etcd.endpoints=" + etcd.endpoint(),
                  "--paramserver.job=" + job,
                  "--paramserver.admin.token=tok",
                  "--paramserver.serving.max-ids=50");
      sv = Channels.forAddress("127.0.0.1:" + servingPort);
      var stub = ServingGrpc.newBlockingStub(sv);

      long lastNumber = 0;
      long[] ids = {1, 2, 3, 4, 1000};
      for (long step = 2; step <= 30; step++) {
        long acked =
            pstub
                .withDeadlineAfter(10, TimeUnit.SECONDS)
                .pushGradients(push(step, 1, 2, 4))
                .getStep();
        LookupResponse r =
            stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                .lookup(
                    LookupRequest.newBuilder()
                        .setTable(TABLE)
                        .addAllIds(Arrays.stream(ids).boxed().toList())
                        .setWidth(WIDTH)
                        .setMinVersion(
                            MinVersion.newBuilder()
                                .setWaitMs(8000)
                                .addShards(
                                    ShardPosition.newBuilder().setIndex(0).setSequence(acked)))
                        .build());
        assertThat(r.getVersion().getShards(0).getSequence()).isGreaterThanOrEqualTo(acked);
        assertThat(r.getVersion().getNumber()).isGreaterThanOrEqualTo(lastNumber);
        lastNumber = r.getVersion().getNumber();
        if (r.getVersion().getShards(0).getSequence() == acked) {
          SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(TABLE);
          Arrays.stream(ids).forEach(ref::addRowIds);
          assertThat(r.getValues())
              .isEqualTo(
                  pstub
                      .withDeadlineAfter(10, TimeUnit.SECONDS)
                      .pullParameters(PullParametersRequest.newBuilder().addSparseRows(ref).build())
                      .getSparseRows(0)
                      .getData());
        }
        assertThat(r.getDefaultedList()).containsExactly(4);
      }
      assertThat(
              stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                  .getServingStatus(ServingStatusRequest.getDefaultInstance())
                  .getShards(0)
                  .getConnected())
          .isTrue();

      assertRefused(
          () -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(lookup("nope", 0, 1)),
          Status.Code.NOT_FOUND,
          ErrorReason.UNKNOWN_PARAMETER,
          "sparse table 'nope' is not served");
      assertRefused(
          () -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(lookup(TABLE, 8, 1)),
          Status.Code.INVALID_ARGUMENT,
          ErrorReason.SHAPE_MISMATCH,
          "rows of 4 float32 values, the request expects 8");
      assertRefused(
          () -> stub.withDeadlineAfter(10, TimeUnit.SECONDS).lookup(lookup(TABLE, 0, 51)),
          Status.Code.RESOURCE_EXHAUSTED,
          ErrorReason.TOO_LARGE,
          "at most 50 ids");
    } finally {
      if (sv != null) {
        sv.shutdownNow();
      }
      if (ps != null) {
        ps.shutdownNow();
      }
      if (serving != null) {
        serving.close();
      }
      if (pserver != null) {
        pserver.close();
      }
      TempDirs.deleteRecursively(checkpoints);
    }
  }

  private static LookupRequest lookup(String table, int width, int ids) {
    LookupRequest.Builder b = LookupRequest.newBuilder().setTable(table).setWidth(width);
    for (int i = 0; i < ids; i++) {
      b.addIds(i);
    }
    return b.build();
  }

  private static void assertRefused(
      Runnable call, Status.Code code, ErrorReason reason, String message) {
    StatusRuntimeException e = catchThrowableOfType(StatusRuntimeException.class, call::run);
    assertThat(e).isNotNull();
    assertThat(e.getStatus().getCode()).isEqualTo(code);
    assertThat(RpcErrors.reasonOf(e)).isEqualTo(reason);
    assertThat(e.getStatus().getDescription()).contains(message);
  }
}
