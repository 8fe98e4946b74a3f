package dev.paramserver.master.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.CoordinationGrpc.CoordinationBlockingStub;
import dev.paramserver.proto.v1.JobModel;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.JoinResponse;
import dev.paramserver.proto.v1.ModelFile;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.EtcdExtension;
import io.grpc.Status;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;

/** Join on a real leader master (Spring context, gRPC on loopback) against a real etcd. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CoordinationJoinTest {
  @RegisterExtension static final EtcdExtension etcdServer = new EtcdExtension();
  private CoordinationMaster master;
  private ConfigurableApplicationContext leader;

  @BeforeEach
  void start() {
    master = new CoordinationMaster(etcdServer);
    leader = master.startLeader();
  }

  @AfterEach
  void stop() {
    master.close();
  }

  private CoordinationBlockingStub stub() {
    return master.stub(leader);
  }

  private static JoinRequest.Builder join(String id, List<ParameterSpec> params) {
    return JoinRequest.newBuilder()
        .setTrainerId(id)
        .setSession("session-" + id)
        .addAllParameters(params)
        .setClient("test");
  }

  @Test
  void join_withoutId_assignsOne_firstModelDefinesTheJob_laterJoinsAgree() throws Exception {
    JoinResponse first = stub().join(join("", Models.mlp()).build());
    assertThat(first.getTrainerId()).matches("trainer-[0-9a-f]{8}");
    assertThat(first.getDefinedModel()).isTrue();
    assertThat(first.getParametersList()).isEqualTo(Models.mlp());
    assertThat(first.getLeaseTtlMs()).isEqualTo(2000);
    assertThat(first.getHeartbeatMs()).isEqualTo(666);
    assertThat(first.getJob()).isEqualTo(master.job);
    JobModel stored =
        JobModel.parseFrom(master.get(master.etcd.keys().model()).orElseThrow().value());
    assertThat(stored.getParametersList()).isEqualTo(Models.mlp());

    // outside BOUNDED_STALENESS a staleness bound is no part of the model (a Java trainer's
    // default of 4 must not refuse a trainer that sends 0)
    JoinResponse second = stub().join(join("t2", Models.mlp()).setStaleness(4).build());
    assertThat(second.getTrainerId()).isEqualTo("t2");
    assertThat(second.getStaleness()).isZero();
    assertThat(second.getDefinedModel()).isFalse();

    JoinResponse taker = stub().join(join("t3", List.of()).setMode(TrainingMode.SYNC).build());
    assertThat(taker.getParametersList()).isEqualTo(Models.mlp());
    assertThat(taker.getMode())
        .as("the job's mode, not the request's")
        .isEqualTo(TrainingMode.ASYNC);
  }

  @Test
  void join_withoutParameters_beforeAnyModel_isNoModel() {
    Throwable t = catchThrowable(() -> stub().join(join("t1", List.of()).build()));
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.NO_MODEL);
  }

  @Test
  void join_withAnotherModel_isModelMismatch_namingTheFirstDifference() {
    stub().join(join("t1", Models.mlp()).build());

    List<ParameterSpec> narrower = new ArrayList<>(Models.mlp());
    narrower.set(0, Models.dense("fc1.w", 4096, 784, 64));
    assertMismatch(
        join("t2", narrower).build(),
        "parameter 'fc1.w': shape [784, 64] here, [784, 128] in the job");

    List<ParameterSpec> fewer = new ArrayList<>(Models.mlp());
    fewer.remove(3);
    assertMismatch(
        join("t2", fewer).build(),
        "parameter 'fc2.b' is missing (the job has 5 parameters, this trainer 4)");

    assertMismatch(
        join("t2", Models.mlp()).setMode(TrainingMode.BOUNDED_STALENESS).setStaleness(2).build(),
        "mode BOUNDED_STALENESS here, ASYNC in the job");
  }

  @Test
  void join_withAModelDescription_recordsItOnceWithTheJobsName_neverForARefusedModel()
      throws Exception {
    String key = master.etcd.keys().modelDescription();
    stub().join(join("t1", Models.mlp()).build());
    assertThat(master.get(key)).as("no description sent, none recorded").isEmpty();

    ModelFile mlp = ModelFile.newBuilder().setModel("mlp").putConfig("hidden", "128").build();
    ModelFile softmax = ModelFile.newBuilder().setModel("softmax").build();
    List<ParameterSpec> narrower = new ArrayList<>(Models.mlp());
    narrower.set(0, Models.dense("fc1.w", 4096, 784, 64));
    assertMismatch(join("t2", narrower).setModelDescription(softmax).build(), "parameter 'fc1.w'");
    assertThat(master.get(key)).as("the description of a refused model").isEmpty();

    stub().join(join("t3", Models.mlp()).setModelDescription(mlp).build());
    stub().join(join("t4", Models.mlp()).setModelDescription(softmax).build());
    assertThat(ModelFile.parseFrom(master.get(key).orElseThrow().value()))
        .as("the first description, named for the job; never replaced")
        .isEqualTo(mlp.toBuilder().setJob(master.job).build());
  }

  private void assertMismatch(JoinRequest req, String difference) {
    Throwable t = catchThrowable(() -> stub().join(req));
    assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.MODEL_MISMATCH);
    assertThat(Status.fromThrowable(t).getDescription()).contains(difference);
  }

  @Test
  void join_idHeldByATrainerOnEtcd_isTrainerIdTaken_andABadIdIsRefused() throws Exception {
    stub().join(join("t0", Models.mlp()).build());
    try (Lease javaTrainer = master.etcd.grantLease(Duration.ofSeconds(5))) {
      master
          .etcd
          .kv()
          .put(
              master.etcd.keys().trainer("t1"),
              "10.0.0.9:8080".getBytes(StandardCharsets.UTF_8),
              javaTrainer);
      Throwable t = catchThrowable(() -> stub().join(join("t1", List.of()).build()));
      assertThat(Status.fromThrowable(t).getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
      assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.TRAINER_ID_TAKEN);
      assertThat(Status.fromThrowable(t).getDescription()).contains("'t1'", "10.0.0.9:8080");
    }
    // the Java trainer left: its id is free
    assertThat(stub().join(join("t1", List.of()).build()).getTrainerId()).isEqualTo("t1");

    Throwable bad = catchThrowable(() -> stub().join(join("no/slash", List.of()).build()));
    assertThat(RpcErrors.reasonOf(bad)).isEqualTo(ErrorReason.BAD_ARGUMENT);
    assertThat(Status.fromThrowable(bad).getDescription()).contains("'no/slash'");
  }

  @Test
  void join_idOfAnAttendingTrainer_isTakenForAnotherSession_butARejoinOfTheSameRunSucceeds()
      throws Exception {
    stub().join(join("t1", Models.mlp()).build());
    CoordinationMaster.Attendance a = master.attend(leader, "t1", "session-t1");
    a.next(Duration.ofSeconds(10));

    JoinResponse again = stub().join(join("t1", Models.mlp()).build());
    assertThat(again.getTrainerId()).isEqualTo("t1");

    Throwable t =
        catchThrowable(() -> stub().join(join("t1", List.of()).setSession("another").build()));
    assertThat(RpcErrors.reasonOf(t)).isEqualTo(ErrorReason.TRAINER_ID_TAKEN);
  }
}
