package dev.paramserver.master.coordination;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.proto.v1.AcquireLockRequest;
import dev.paramserver.proto.v1.AcquireLockResponse;
import dev.paramserver.proto.v1.AcquireLockResponse.Outcome;
import dev.paramserver.proto.v1.BlockPlacement;
import dev.paramserver.proto.v1.CoordinationGrpc.CoordinationBlockingStub;
import dev.paramserver.proto.v1.GetPlacementRequest;
import dev.paramserver.proto.v1.JoinRequest;
import dev.paramserver.proto.v1.LockName;
import dev.paramserver.proto.v1.Placement;
import dev.paramserver.proto.v1.ReleaseLockRequest;
import dev.paramserver.proto.v1.SparseTablePlacement;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.tensor.BlockLayout;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.context.ConfigurableApplicationContext;

/** GetPlacement and the job's locks on a real leader master against a real etcd. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class CoordinationPlacementAndLocksTest {
  @RegisterExtension static final EtcdExtension etcdServer = new EtcdExtension();
  private final ScheduledExecutorService heart = Executors.newSingleThreadScheduledExecutor();
  private CoordinationMaster master;
  private ConfigurableApplicationContext leader;

  @BeforeEach
  void start() {
    master = new CoordinationMaster(etcdServer);
    leader = master.startLeader();
  }

  @AfterEach
  void stop() {
    heart.shutdownNow();
    master.close();
  }

  private CoordinationBlockingStub stub() {
    return master.stub(leader);
  }

  private void join(String id) {
    stub()
        .join(
            JoinRequest.newBuilder()
                .setTrainerId(id)
                .setSession("s-" + id)
                .addAllParameters(Models.mlp())
                .build());
  }

  private CoordinationMaster.Attendance attend(String id) throws InterruptedException {
    join(id);
    CoordinationMaster.Attendance a = master.attend(leader, id, "s-" + id);
    heart.scheduleAtFixedRate(a::beat, 0, 500, TimeUnit.MILLISECONDS);
    a.next(Duration.ofSeconds(10));
    return a;
  }

  private AcquireLockResponse acquire(String id, LockName lock) {
    return stub()
        .acquireLock(AcquireLockRequest.newBuilder().setTrainerId(id).setLock(lock).build());
  }

  @Test
  void placement_isShardPlacementOfTheSameBlocks_forTheAskedOrDesiredCount() {
    join("t1");
    List<BlockSpec> blocks = BlockLayout.denseBlocks(Models.mlp());
    ShardPlacement expected = ShardPlacement.place(blocks, 3);

    Placement p = stub().getPlacement(GetPlacementRequest.newBuilder().setPservers(3).build());
    assertThat(p.getPservers()).isEqualTo(3);
    assertThat(p.getBlocksCount()).isEqualTo(blocks.size()).isGreaterThan(20);
    for (BlockPlacement b : p.getBlocksList()) {
      assertThat(b.getPserver())
          .as("owner of %s#%d", b.getName(), b.getBlock())
          .isEqualTo(expected.owner(b.getName(), b.getBlock()));
    }
    assertThat(p.getBlocksList().stream().map(b -> b.getPserver()).distinct().count()).isEqualTo(3);
    assertThat(p.getBlocks(0).getOffset()).isZero();
    assertThat(p.getBlocks(1).getOffset()).isEqualTo(4096);
    assertThat(p.getSparseTablesList())
        .containsExactly(SparseTablePlacement.newBuilder().setName("emb").setWidth(16).build());

    master.put(master.etcd.keys().psDesired(), "2");
    Placement desired = stub().getPlacement(GetPlacementRequest.getDefaultInstance());
    assertThat(desired.getPservers()).isEqualTo(2);
    ShardPlacement two = ShardPlacement.place(blocks, 2);
    assertThat(desired.getBlocksList())
        .allSatisfy(
            b -> assertThat(b.getPserver()).isEqualTo(two.owner(b.getName(), b.getBlock())));
  }

  @Test
  void initLock_grantedHeldDone_betweenCoordinatedTrainers_andAJavaTrainersKeys() throws Exception {
    assertThat(RpcErrors.reasonOf(catchThrowable(() -> acquire("t1", LockName.INIT_PARAMETERS))))
        .as("no membership yet")
        .isEqualTo(ErrorReason.NOT_JOINED);
    attend("t1");
    attend("t2");
    var keys = master.etcd.keys();

    AcquireLockResponse granted = acquire("t1", LockName.INIT_PARAMETERS);
    assertThat(granted.getOutcome()).isEqualTo(Outcome.GRANTED);
    assertThat(master.get(keys.initLock()).orElseThrow().valueAsString())
        .as("the value a Java trainer writes: the holder's id")
        .isEqualTo("t1");
    assertThat(acquire("t1", LockName.INIT_PARAMETERS).getOutcome())
        .as("again by its holder")
        .isEqualTo(Outcome.GRANTED);
    AcquireLockResponse held = acquire("t2", LockName.INIT_PARAMETERS);
    assertThat(held.getOutcome()).isEqualTo(Outcome.HELD);
    assertThat(held.getHolder()).isEqualTo("t1");

    stub()
        .releaseLock(
            ReleaseLockRequest.newBuilder()
                .setTrainerId("t1")
                .setLock(LockName.INIT_PARAMETERS)
                .setDone("init-42")
                .build());
    assertThat(master.get(keys.initLock())).isEmpty();
    assertThat(master.get(keys.initDone()).orElseThrow().valueAsString()).isEqualTo("init-42");
    AcquireLockResponse done = acquire("t2", LockName.INIT_PARAMETERS);
    assertThat(done.getOutcome()).isEqualTo(Outcome.DONE);
    assertThat(done.getDone()).isEqualTo("init-42");
    // a pserver restarted without a checkpoint: the lock is granted again, with the job's init id
    AcquireLockResponse again =
        stub()
            .acquireLock(
                AcquireLockRequest.newBuilder()
                    .setTrainerId("t2")
                    .setLock(LockName.INIT_PARAMETERS)
                    .setReinitialise(true)
                    .build());
    assertThat(again.getOutcome()).isEqualTo(Outcome.GRANTED);
    assertThat(again.getDone()).isEqualTo("init-42");
    assertThat(master.get(keys.initLock()).orElseThrow().valueAsString()).isEqualTo("t2");
  }

  @Test
  void exportLock_heldByAJavaTrainerOnEtcd_isHeld_andALockEndsWithItsMembership() throws Exception {
    var keys = master.etcd.keys();
    CoordinationMaster.Attendance t1 = attend("t1");
    attend("t2");
    try (var javaLease = master.etcd.grantLease(Duration.ofSeconds(5))) {
      assertThat(
              master
                  .etcd
                  .kv()
                  .putIfAbsent(
                      keys.exportLock(), "java-1".getBytes(StandardCharsets.UTF_8), javaLease))
          .isTrue();
      AcquireLockResponse held = acquire("t1", LockName.EXPORT_MODEL);
      assertThat(held.getOutcome()).isEqualTo(Outcome.HELD);
      assertThat(held.getHolder()).isEqualTo("java-1");
    }
    assertThat(acquire("t1", LockName.EXPORT_MODEL).getOutcome()).isEqualTo(Outcome.GRANTED);
    AcquireLockResponse eval =
        stub()
            .acquireLock(
                AcquireLockRequest.newBuilder()
                    .setTrainerId("t1")
                    .setLock(LockName.EVALUATE_PASS)
                    .setPass(3)
                    .build());
    assertThat(eval.getOutcome()).isEqualTo(Outcome.GRANTED);
    assertThat(master.get(keys.evaluator(3)).orElseThrow().valueAsString()).isEqualTo("t1");

    t1.cancel(); // the trainer dies: its locks go with its membership
    Poll.until(
        Duration.ofSeconds(5),
        () -> master.get(keys.exportLock()).isEmpty() && master.get(keys.evaluator(3)).isEmpty(),
        "t1's locks to go with its membership");
    assertThat(acquire("t2", LockName.EXPORT_MODEL).getOutcome()).isEqualTo(Outcome.GRANTED);
  }
}
