package dev.paramserver.master;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.proto.v1.GetStatusRequest;
import dev.paramserver.proto.v1.GetTaskRequest;
import dev.paramserver.proto.v1.GetTaskResponse;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterGrpc;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.SetDatasetRequest;
import dev.paramserver.proto.v1.TaskFinishedRequest;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordWriter;
import dev.paramserver.rpc.Channels;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.etcd.jetcd.Client;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Hot standby: the leader's lease is revoked under it mid-pass; the standby takes over with the
 * persisted queues (pending tasks keep their epochs and deadlines) and the job finishes with every
 * task of every pass done.
 */
class MasterFailoverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  @TempDir Path dir;
  private final MasterContexts masters = new MasterContexts();
  private final List<ManagedChannel> channels = new ArrayList<>();

  @AfterEach
  void close() {
    channels.forEach(Channels::close);
    masters.close();
  }

  private MasterGrpc.MasterBlockingStub stub(String address) {
    ManagedChannel ch = Channels.forAddress(address);
    channels.add(ch);
    return MasterGrpc.newBlockingStub(ch);
  }

  private static GetTaskResponse getTask(
      MasterGrpc.MasterBlockingStub s, String trainer, int pass) {
    return s.withDeadlineAfter(5, TimeUnit.SECONDS)
        .getTask(GetTaskRequest.newBuilder().setTrainerId(trainer).setPass(pass).build());
  }

  private static boolean finish(MasterGrpc.MasterBlockingStub s, String trainer, long id, long e) {
    return s.withDeadlineAfter(5, TimeUnit.SECONDS)
        .taskFinished(
            TaskFinishedRequest.newBuilder()
                .setTrainerId(trainer)
                .setTaskId(id)
                .setEpoch(e)
                .build())
        .getAccepted();
  }

  private static JobStatus status(MasterGrpc.MasterBlockingStub s) {
    return s.withDeadlineAfter(5, TimeUnit.SECONDS)
        .getStatus(GetStatusRequest.getDefaultInstance());
  }

  @Test
  void leaseRevokedMidPass_standbyTakesOverWithTheQueues_andNoTaskIsLost() throws Exception {
    for (String f : new String[] {"part-0.rio", "part-1.rio"}) {
      try (RecordWriter w = RecordWriter.create(dir.resolve(f), Compressor.NONE, 2)) {
        for (int i = 0; i < 6; i++) {
          w.write(new byte[] {(byte) i}); // 3 chunks of 2 records per file
        }
      }
    }
    String job = etcd.uniqueJob();
    String[] settings = {
      "--paramserver.master.passes=2",
      "--paramserver.master.task-timeout=5s",
      "--paramserver.master.max-failures=3"
    };
    ConfigurableApplicationContext first = masters.start(etcd.endpoint(), job, settings);
    MasterElection a = MasterContexts.election(first);
    Poll.until(Duration.ofSeconds(20), a::isLeader, "the first master to lead");
    MasterGrpc.MasterBlockingStub onA = stub(a.identity());
    onA.withDeadlineAfter(5, TimeUnit.SECONDS)
        .setDataset(
            SetDatasetRequest.newBuilder()
                .addGlobs(dir + "/part-*.rio")
                .setTrainerId("t1")
                .build());
    ConfigurableApplicationContext second = masters.start(etcd.endpoint(), job, settings);
    MasterElection b = MasterContexts.election(second);
    Poll.until(
        Duration.ofSeconds(20),
        () -> b.state() == MasterElection.State.CAMPAIGNING,
        "the second master to stand by");

    // tasks handed out just before the leader is cut off
    GetTaskResponse t0 = getTask(onA, "t1", 0);
    GetTaskResponse t1 = getTask(onA, "t2", 0);
    GetTaskResponse t2 = getTask(onA, "t3", 0);
    assertThat(List.of(t0, t1, t2))
        .extracting(r -> r.getTask().getId())
        .containsExactly(0L, 1L, 2L);
    assertThat(finish(onA, "t1", 0, t0.getTask().getEpoch())).isTrue();

    // the leader's lease ends under it, as when it is frozen or cut off from etcd
    long takeoverMs;
    try (EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
        Client client = Client.builder().endpoints(etcd.endpoint()).build()) {
      long leaseId =
          c.kv().get(c.keys().masterAddr()).map(KeyValueStore.KeyValue::leaseId).orElseThrow();
      long start = System.nanoTime();
      client.getLeaseClient().revoke(leaseId).get(5, TimeUnit.SECONDS);
      Poll.until(Duration.ofSeconds(15), Duration.ofMillis(10), b::isLeader, "the standby to lead");
      takeoverMs = (System.nanoTime() - start) / 1_000_000;
      System.out.println("TAKEOVER_MS after lease revocation: " + takeoverMs);
      Poll.until(
          Duration.ofSeconds(5),
          () ->
              c.kv()
                  .get(c.keys().masterAddr())
                  .map(KeyValueStore.KeyValue::valueAsString)
                  .orElse("")
                  .equals(b.identity()),
          "master/addr to name the new leader");
    }
    // the old leader stopped serving: NOT_LEADER, naming the new leader once it knows it
    Poll.until(
        Duration.ofSeconds(10),
        () -> {
          try {
            getTask(onA, "t9", 0);
            return false;
          } catch (RuntimeException e) {
            return RpcErrors.reasonOf(e) == ErrorReason.NOT_LEADER;
          }
        },
        "the old leader to answer NOT_LEADER");
    Poll.until(
        Duration.ofSeconds(10),
        () -> a.state() == MasterElection.State.CAMPAIGNING,
        "the old leader to campaign again");

    MasterGrpc.MasterBlockingStub onB = stub(b.identity());
    JobStatus taken = status(onB);
    assertThat(taken.getState()).isEqualTo(JobState.RUNNING);
    assertThat(taken.getPass()).isZero();
    assertThat(taken.getTasks().getDone()).isEqualTo(1);
    assertThat(taken.getTasks().getPending()).isEqualTo(2);
    assertThat(taken.getTasks().getTodo()).isEqualTo(3);
    assertThat(taken.getPasses(0).getTrainersList()).containsExactly("t1", "t2", "t3");
    assertThat(taken.getMasterId()).isEqualTo(b.identity());

    // a trainer that got its task from the old leader reports to the new one: accepted
    assertThat(finish(onB, "t2", 1, t1.getTask().getEpoch())).isTrue();
    // t3 died holding task 2: its persisted deadline expires on the new leader and it is re-queued;
    // a fresh trainer works through both passes
    int pass = 0;
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      assertThat(System.nanoTime()).as("job finished in time").isLessThan(deadline);
      GetTaskResponse r = getTask(onB, "t4", pass);
      if (r.getOutcome() == GetTaskResponse.Outcome.TASK) {
        assertThat(finish(onB, "t4", r.getTask().getId(), r.getTask().getEpoch())).isTrue();
      } else if (r.getOutcome() == GetTaskResponse.Outcome.PASS_FINISHED) {
        pass = r.getCurrentPass();
      } else if (r.getOutcome() == GetTaskResponse.Outcome.WAIT) {
        Thread.sleep(r.getRetryAfterMs());
      } else {
        assertThat(r.getOutcome()).isEqualTo(GetTaskResponse.Outcome.JOB_FINISHED);
        break;
      }
    }
    JobStatus end = status(onB);
    assertThat(end.getState()).isEqualTo(JobState.FINISHED);
    assertThat(end.getPassesList()).hasSize(2);
    for (PassStatus p : end.getPassesList()) {
      assertThat(p.getTasks().getDone()).as("tasks done in pass %d", p.getPass()).isEqualTo(6);
      assertThat(p.getTasks().getFailed()).isZero();
      assertThat(p.getRecords()).as("records of pass %d", p.getPass()).isEqualTo(12);
    }
    assertThat(end.getPasses(0).getTimeouts())
        .as("task 2 timed out on the new leader")
        .isEqualTo(1);
    assertThat(takeoverMs).isLessThan(10_000);
  }
}
