package dev.paramserver.it;

import static dev.paramserver.it.ScriptedPushes.PARTS;
import static dev.paramserver.it.ScriptedPushes.push;
import static dev.paramserver.it.ScriptedPushes.subtract;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.etcd.ShardSyncRecord;
import dev.paramserver.localcluster.Role;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.FaultProxy;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * The double fault of issue 42, against real pserver processes and a real etcd: one shard, {@code
 * replicas = 2}; the primary's link to its backup is black-holed past the replication timeout while
 * the client pushes, so the primary answers pushes alone (etcd records the backup out of sync);
 * then the primary is killed with SIGKILL, its disk intact. The backup must not take the shard
 * over; the restarted primary claims it back with its log, answers every acknowledged push as a
 * duplicate, serves {@code init - sum of the gradients} bit for bit, and the backup follows it
 * again.
 */
@Timeout(300)
class ReplicaOutOfSyncTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  private static Map<String, String> properties(String job, Path home) {
    Map<String, String> p = new HashMap<>();
    p.put("paramserver.job", job);
    p.put("paramserver.etcd.endpoints", etcd.endpoint());
    p.put("paramserver.etcd.lease-ttl", "2s");
    p.put("paramserver.pserver.desired", "1");
    p.put("paramserver.pserver.replicas", "2");
    p.put("paramserver.pserver.replication-timeout", "1s");
    p.put("paramserver.pserver.index", "0");
    p.put("paramserver.pserver.checkpoint-dir", home.resolve("checkpoints").toString());
    p.put("paramserver.pserver.checkpoint-interval", "1h");
    return p;
  }

  private static Optional<ShardStatus> status(ParameterServerGrpc.ParameterServerBlockingStub s) {
    try {
      return Optional.of(
          s.withDeadlineAfter(5, TimeUnit.SECONDS)
              .getShardStatus(GetShardStatusRequest.getDefaultInstance()));
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }

  private static boolean hasRole(ParameterServerGrpc.ParameterServerBlockingStub s, ReplicaRole r) {
    return status(s).map(st -> st.getReplicaRole() == r).orElse(false);
  }

  @Test
  void primaryAnsweredAloneThenKilled_backupWaits_restartedPrimaryServesEveryAcknowledgedPush()
      throws Exception {
    String job = etcd.uniqueJob();
    ServiceRun.prepareClassData(Role.PSERVER, dir.resolve("class-data"));
    Path homeA = dir.resolve("a");
    Path homeB = dir.resolve("b");
    float[] expected = ScriptedPushes.initial();
    ServiceRun a = null;
    ServiceRun b = null;
    ManagedChannel toA = null;
    ManagedChannel toB = null;
    try (FaultProxy toBackup = new FaultProxy("to-backup");
        EtcdCoordinator c = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      a = ServiceRun.start(Role.PSERVER, dir.resolve("logs/a-0.log"), properties(job, homeA));
      a.awaitGrpcListening(Duration.ofSeconds(120));
      toA = Channels.forAddress("127.0.0.1:" + a.grpcPort);
      var stubA = ParameterServerGrpc.newBlockingStub(toA);
      Poll.until(
          Duration.ofSeconds(120),
          () -> hasRole(stubA, ReplicaRole.REPLICA_PRIMARY),
          "a is the primary");
      // the primary dials its backup through the proxy
      Map<String, String> pb = properties(job, homeB);
      pb.put("paramserver.pserver.advertise-port", Integer.toString(toBackup.port()));
      b = ServiceRun.start(Role.PSERVER, dir.resolve("logs/b.log"), pb);
      toBackup.target(b.grpcPort);
      b.awaitGrpcListening(Duration.ofSeconds(120));
      toB = Channels.forAddress("127.0.0.1:" + b.grpcPort);
      var stubB = ParameterServerGrpc.newBlockingStub(toB);
      stubA
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .initParameters(ScriptedPushes.init(expected.clone()));
      stubA.withDeadlineAfter(10, TimeUnit.SECONDS).finishInit(ScriptedPushes.finishInit());
      Poll.until(
          Duration.ofSeconds(60),
          () ->
              hasRole(stubB, ReplicaRole.REPLICA_BACKUP_SYNCED)
                  && ShardSyncRecord.read(c.kv(), c.keys(), 0).map(r -> r.inSync()).orElse(false),
          "b synced, and recorded in sync in etcd");

      long step = 1; // step 0 is not deduplicated
      for (; step < 3; step++) { // replicated
        for (int p = 0; p < PARTS; p++) {
          assertThat(
                  stubA
                      .withDeadlineAfter(10, TimeUnit.SECONDS)
                      .pushGradients(push(step, p))
                      .getDuplicate())
              .isFalse();
          subtract(expected, step, p);
        }
      }
      toBackup.blackHole(); // P->B, past the replication timeout (1 s)
      for (; step < 5; step++) { // answered alone
        for (int p = 0; p < PARTS; p++) {
          assertThat(
                  stubA
                      .withDeadlineAfter(20, TimeUnit.SECONDS)
                      .pushGradients(push(step, p))
                      .getDuplicate())
              .isFalse();
          subtract(expected, step, p);
        }
      }
      ShardSyncRecord record = ShardSyncRecord.read(c.kv(), c.keys(), 0).orElseThrow();
      assertThat(record.inSync()).as("etcd's record after the alone answers: %s", record).isFalse();

      a.process.destroyForcibly(); // kill -9, the disk intact
      assertThat(a.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
      toBackup.heal();
      ServiceRun backup = b;
      Poll.until(
          Duration.ofSeconds(60),
          () -> hasRole(stubB, ReplicaRole.REPLICA_PRIMARY) || refused(backup),
          "b decided whether to take the shard over");
      assertThat(hasRole(stubB, ReplicaRole.REPLICA_PRIMARY))
          .as("the out-of-sync backup took the shard over; see %s", b.log)
          .isFalse();

      long restarted = System.nanoTime();
      a = ServiceRun.start(Role.PSERVER, dir.resolve("logs/a-1.log"), properties(job, homeA));
      a.awaitGrpcListening(Duration.ofSeconds(120));
      Channels.close(toA);
      toA = Channels.forAddress("127.0.0.1:" + a.grpcPort);
      var stubA2 = ParameterServerGrpc.newBlockingStub(toA);
      Poll.until(
          Duration.ofSeconds(60),
          () -> hasRole(stubA2, ReplicaRole.REPLICA_PRIMARY),
          "the restarted a is the primary again; see " + a.log);
      double seconds = (System.nanoTime() - restarted) / 1e9;
      assertThat(seconds).as("restart to serving, seconds").isLessThan(30);
      for (long s = 1; s < step; s++) {
        for (int p = 0; p < PARTS; p++) {
          assertThat(
                  stubA2
                      .withDeadlineAfter(20, TimeUnit.SECONDS)
                      .pushGradients(push(s, p))
                      .getDuplicate())
              .as("step %d part %d, acknowledged before the kill, sent again", s, p)
              .isTrue();
        }
      }
      float[] pulled =
          ScriptedPushes.values(
              stubA2
                  .withDeadlineAfter(10, TimeUnit.SECONDS)
                  .pullParameters(PullParametersRequest.getDefaultInstance()));
      assertThat(ScriptedPushes.mismatches(pulled, expected))
          .as("elements differing from init - sum of the acknowledged gradients")
          .isZero();
      Poll.until(
          Duration.ofSeconds(60),
          () -> hasRole(stubB, ReplicaRole.REPLICA_BACKUP_SYNCED),
          "b follows the restarted primary");
      System.out.printf(
          "REPLICA-OUT-OF-SYNC restart->serving %.2fs, %d pushes answered alone kept%n",
          seconds, 2 * PARTS);
    } finally {
      Channels.close(toA);
      Channels.close(toB);
      if (a != null) {
        a.close();
      }
      if (b != null) {
        b.close();
      }
    }
  }

  private static boolean refused(ServiceRun backup) {
    try {
      return backup.output().contains("etcd does not record it in sync");
    } catch (IOException e) {
      return false;
    }
  }
}
