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
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushGradientsResponse;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.rpc.Channels;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exactly once with a replica, against real pserver processes: one shard, {@code replicas = 2}, two
 * pservers (a primary and its backup). The scripted client of {@link ExactlyOnceKillTest} pushes
 * small-integer gradients under SGD with learning rate 1; at a random push the primary is killed
 * with SIGKILL and its whole directory (checkpoints and write-ahead log) deleted, so only the
 * backup holds its updates. The backup takes the shard over; the client retries every
 * unacknowledged push on it; the killed pserver is started again on an empty directory and becomes
 * the new backup, filled from the new primary. After 10 kills the pulled parameters must equal
 * {@code init - sum of the gradients}, bit for bit. Takeover time: from the kill to the first push
 * the new primary acknowledged (the lease TTL, 2 s here, is most of it).
 */
@Timeout(1200)
class ReplicaTakeoverTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  /**
   * Kill points; {@code -Dreplica.kills=N} changes it. Each is the same case at another random
   * moment (a kill with one step in flight, 0 to 3 ms after it was sent; the restarted pserver
   * filled as the backup): 10 take half the time of 20, and the soak ({@link FaultSoakTest}) kills
   * primaries under load too.
   */
  private static final int KILLS = Integer.getInteger("replica.kills", 10);

  @TempDir(cleanup = CleanupMode.ON_SUCCESS)
  Path dir;

  /** One pserver process and its client. */
  private final class Node implements AutoCloseable {
    final String name;
    final Path home;
    ServiceRun run;
    ManagedChannel channel;
    ParameterServerGrpc.ParameterServerFutureStub stub;
    int starts;

    Node(String name) {
      this.name = name;
      this.home = dir.resolve(name);
    }

    void start(String job) throws IOException, InterruptedException {
      run =
          ServiceRun.start(
              Role.PSERVER,
              dir.resolve("logs/" + name + "-" + starts++ + ".log"),
              Map.of(
                  "paramserver.job", job,
                  "paramserver.etcd.endpoints", etcd.endpoint(),
                  "paramserver.etcd.lease-ttl", "2s",
                  "paramserver.pserver.desired", "1",
                  "paramserver.pserver.replicas", "2",
                  "paramserver.pserver.index", "0",
                  "paramserver.pserver.checkpoint-dir", home.resolve("checkpoints").toString(),
                  "paramserver.pserver.checkpoint-interval", "1s"));
      run.awaitGrpcListening(Duration.ofSeconds(120));
      Channels.close(channel);
      channel = Channels.forAddress("127.0.0.1:" + run.grpcPort);
      stub = ParameterServerGrpc.newFutureStub(channel);
    }

    ShardStatus status() {
      try {
        return stub.withDeadlineAfter(5, TimeUnit.SECONDS)
            .getShardStatus(GetShardStatusRequest.getDefaultInstance())
            .get(6, TimeUnit.SECONDS);
      } catch (Exception e) {
        return null;
      }
    }

    /** Waits until this pserver has {@code role}. */
    void awaitRole(ReplicaRole role, int seconds) throws InterruptedException {
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
      while (true) {
        ShardStatus s = status();
        if (s != null && s.getReplicaRole() == role) {
          return;
        }
        if (System.nanoTime() > deadline) {
          throw new AssertionError(
              name
                  + " did not become "
                  + role
                  + " within "
                  + seconds
                  + " s (status "
                  + s
                  + "); see "
                  + run.log);
        }
        Thread.sleep(100);
      }
    }

    /** SIGKILL, then the whole directory (checkpoints and log) is deleted. */
    void killAndWipe() throws IOException, InterruptedException {
      run.process.destroyForcibly();
      assertThat(run.process.waitFor(10, TimeUnit.SECONDS)).isTrue();
      if (Files.exists(home)) {
        try (Stream<Path> files = Files.walk(home)) {
          for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
            Files.delete(p);
          }
        }
      }
    }

    @Override
    public void close() {
      Channels.close(channel);
      if (run != null) {
        run.close();
      }
    }
  }

  /** Waits until etcd records the backup of shard 0 in sync (one client for every kill). */
  private static void awaitRecordedInSync(EtcdCoordinator c) {
    Poll.until(
        Duration.ofSeconds(60),
        () -> ShardSyncRecord.read(c.kv(), c.keys(), 0).map(r -> r.inSync()).orElse(false),
        "etcd records the backup of shard 0 in sync");
  }

  private static <T> T await(Future<T> f) throws ExecutionException, InterruptedException {
    return ScriptedPushes.await(f, 15);
  }

  private int duplicates;

  /** Sends {@code request} to {@code node} until it is acknowledged (it may be taking over). */
  private PushGradientsResponse pushUntilAcknowledged(Node node, PushGradientsRequest request)
      throws InterruptedException {
    PushGradientsResponse r =
        ScriptedPushes.pushUntilAcknowledged(node.stub, request, node.run.log);
    if (r.getDuplicate()) {
      duplicates++;
    }
    return r;
  }

  @Test
  void primaryKilledAndItsDiskLost_backupTakesOver_withEveryAcknowledgedPush_bitForBit()
      throws Exception {
    long seed = Long.getLong("replica.seed", System.nanoTime());
    Random random = new Random(seed);
    String job = etcd.uniqueJob();
    float[] expected = ScriptedPushes.initial();
    List<Double> takeoverSeconds = new ArrayList<>();
    long step = 0;
    long pushes = 0;
    ServiceRun.prepareClassData(Role.PSERVER, dir.resolve("class-data"));
    Node primary = new Node("a");
    Node backup = new Node("b");
    try (EtcdCoordinator coordinator =
        EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job))) {
      primary.start(job);
      primary.awaitRole(ReplicaRole.REPLICA_PRIMARY, 180);
      backup.start(job);
      backup.awaitRole(ReplicaRole.REPLICA_BACKUP_SYNCED, 180);
      await(
          primary
              .stub
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .initParameters(ScriptedPushes.init(expected.clone())));
      await(
          primary
              .stub
              .withDeadlineAfter(10, TimeUnit.SECONDS)
              .finishInit(ScriptedPushes.finishInit()));
      for (int kill = 0; kill < KILLS; kill++) {
        int whole = 1 + random.nextInt(15);
        for (int s = 0; s < whole; s++) {
          step++;
          List<Future<PushGradientsResponse>> sent = new ArrayList<>();
          for (int p = 0; p < PARTS; p++) {
            sent.add(
                primary.stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(step, p)));
          }
          for (int p = 0; p < PARTS; p++) {
            assertThat(await(sent.get(p)).getDuplicate()).isFalse();
            subtract(expected, step, p);
            pushes++;
          }
        }
        // The new backup (started after the previous kill) holds the shard before this kill, and
        // etcd records it in sync (else it would not take over: the shard would wait for the
        // primary's log, which this test deletes).
        backup.awaitRole(ReplicaRole.REPLICA_BACKUP_SYNCED, 180);
        awaitRecordedInSync(coordinator);
        step++;
        List<Future<PushGradientsResponse>> inFlight = new ArrayList<>();
        for (int p = 0; p < PARTS; p++) {
          inFlight.add(
              primary.stub.withDeadlineAfter(10, TimeUnit.SECONDS).pushGradients(push(step, p)));
        }
        TimeUnit.MICROSECONDS.sleep(random.nextInt(3000));
        long killedAt = System.nanoTime();
        primary.killAndWipe();
        boolean[] acknowledged = new boolean[PARTS];
        for (int p = 0; p < PARTS; p++) {
          try {
            await(inFlight.get(p));
            acknowledged[p] = true;
          } catch (ExecutionException e) {
            acknowledged[p] = false;
          }
        }
        Node next = backup;
        boolean first = true;
        for (int p = 0; p < PARTS; p++) {
          // every part, acknowledged or not, is sent to the new primary: an acknowledged one must
          // be answered as a duplicate (the backup held it), an unacknowledged one is applied once
          PushGradientsResponse r = pushUntilAcknowledged(next, push(step, p));
          if (first) {
            takeoverSeconds.add((System.nanoTime() - killedAt) / 1e9);
            first = false;
          }
          if (acknowledged[p]) {
            assertThat(r.getDuplicate())
                .as("part %d of step %d was acknowledged before the kill (seed %d)", p, step, seed)
                .isTrue();
          }
          subtract(expected, step, p);
          pushes++;
        }
        next.awaitRole(ReplicaRole.REPLICA_PRIMARY, 30);
        primary.start(job); // on an empty directory: it becomes the backup
        backup = primary;
        primary = next;
      }
      float[] pulled =
          ScriptedPushes.values(
              await(
                  primary
                      .stub
                      .withDeadlineAfter(10, TimeUnit.SECONDS)
                      .pullParameters(PullParametersRequest.getDefaultInstance())));
      takeoverSeconds.sort(null);
      String report =
          String.format(
              Locale.ROOT,
              "REPLICA-TAKEOVER kills=%d pushes=%d duplicates=%d takeover(kill->first ack)"
                  + " median=%.2fs max=%.2fs lease_ttl=2s seed=%d",
              KILLS,
              pushes,
              duplicates,
              takeoverSeconds.get(takeoverSeconds.size() / 2),
              takeoverSeconds.get(takeoverSeconds.size() - 1),
              seed);
      ScriptedPushes.reportAndCheck(
          report, "replica-takeover-report.txt", pulled, expected, seed, dir);
    } finally {
      primary.close();
      backup.close();
    }
  }
}
