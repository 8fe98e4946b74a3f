package dev.paramserver.pserver.replication;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.Lease;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ReplicateRequest;
import dev.paramserver.proto.v1.ReplicateResponse;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.pserver.replication.harness.InMemoryCoordinator;
import dev.paramserver.pserver.replication.harness.ShardState;
import dev.paramserver.pserver.replication.harness.Trainers;
import dev.paramserver.pserver.role.ShardLifecycle;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The backup's side alone: records of a copy are applied in their sequence order whatever order
 * they arrive in, and a copy that comes after a newer one is discarded.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BackupReplicaTest {
  private static final long SEED = 11;
  // The lease of the backup's registration (ps_backup/0), which the calls are for.
  private static final long REGISTRATION = 41;

  private final InMemoryCoordinator coordinator = new InMemoryCoordinator();
  private final ParameterShard primary = new ParameterShard(true);
  private final ParameterShard shard = new ParameterShard(true);
  private Path dir;
  private Lease lease;
  private long epoch;
  private BackupReplica backup;
  // a thread per waiting call, as the service's blocking executor gives them
  private final ExecutorService callers = Executors.newCachedThreadPool();

  @BeforeEach
  void setUp() {
    dir = TempDirs.create("backup-replica");
    lease = coordinator.grantLease(Duration.ofSeconds(30));
    String key = coordinator.keys().ps(0);
    coordinator.kv().putIfAbsent(key, "primary".getBytes(), lease);
    epoch = coordinator.kv().get(key).orElseThrow().createRevision();
    Trainers.initialise(primary);
    ShardLifecycle lifecycle = new ShardLifecycle(shard);
    lifecycle.backup(0);
    backup =
        new BackupReplica(
            shard,
            lifecycle,
            0,
            coordinator.kv(),
            key,
            coordinator.keys().psSync(0),
            REGISTRATION,
            Duration.ofSeconds(5),
            b -> {});
    backup.start();
  }

  @AfterEach
  void tearDown() {
    backup.close();
    callers.shutdownNow();
    lease.revoke();
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  @Test
  void recordsArrivingInReverse_areAppliedInTheirSequenceOrder() throws Exception {
    install(1, "copy-1");
    ReplicateRequest[] records = new ReplicateRequest[4];
    for (int i = 1; i <= 3; i++) {
      primary.pushOutcome(push(0, i));
      records[i] = record(1, i, push(0, i));
    }
    CompletableFuture<ReplicateResponse> third = replicateAsync(records[3]);
    CompletableFuture<ReplicateResponse> second = replicateAsync(records[2]);
    assertThat(backup.ready(records[3])).as("record 3 before record 1 arrived").isFalse();
    assertThat(backup.replicate(records[1]).getNeedFill()).isFalse();
    assertThat(second.get(10, TimeUnit.SECONDS).getNeedFill()).isFalse();
    assertThat(third.get(10, TimeUnit.SECONDS).getNeedFill()).isFalse();

    assertThat(ShardState.of(shard.snapshot()).differences(ShardState.of(primary.snapshot())))
        .isEmpty();
  }

  @Test
  void copyOlderThanTheInstalledOne_isDiscarded() throws Exception {
    primary.pushOutcome(push(0, 1));
    Path older = copy("copy-1");
    primary.pushOutcome(push(1, 1));
    install(2, "copy-2");
    ShardState newer = ShardState.of(primary.snapshot());

    backup.install(epoch, REGISTRATION, 1, older, crc(older));

    assertThat(ShardState.of(shard.snapshot()).differences(newer)).isEmpty();
    assertThat(backup.synced()).isTrue();
    // a record of the older copy is held by the newer one: answered, not applied
    assertThat(backup.replicate(record(1, 1, push(1, 1))).getNeedFill()).isFalse();
    assertThat(ShardState.of(shard.snapshot()).differences(newer)).isEmpty();
  }

  @Test
  void callsOfAnotherRegistration_areRefused_callsThatDoNotTellOne_areAccepted() throws Exception {
    install(1, "copy-1");
    primary.pushOutcome(push(0, 1));
    ShardState before = ShardState.of(shard.snapshot());
    ReplicateRequest earlier = record(1, 1, push(0, 1)).toBuilder().setBackupLease(7).build();
    Path copy = copy("copy-of-another-registration");

    assertThatThrownBy(() -> backup.replicate(earlier))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("an earlier registration of this backup")
        .hasMessageNotContaining("7");
    assertThatThrownBy(() -> backup.install(epoch, 7, 1, copy, crc(copy)))
        .isInstanceOf(ServiceException.class);
    assertThat(ShardState.of(shard.snapshot()).differences(before)).isEmpty();

    // a primary that predates backup_lease does not tell it (0): accepted as before
    ReplicateRequest untold = record(1, 1, push(0, 1)).toBuilder().clearBackupLease().build();
    assertThat(backup.replicate(untold).getNeedFill()).isFalse();
    assertThat(ShardState.of(shard.snapshot()).differences(ShardState.of(primary.snapshot())))
        .isEmpty();
  }

  private PushGradientsRequest push(int trainer, long step) {
    return Trainers.push(SEED, trainer, step);
  }

  /** The record the primary sends for {@code push}, the {@code sequence}-th after a copy. */
  private ReplicateRequest record(long generation, long sequence, PushGradientsRequest push) {
    return ReplicateRequest.newBuilder()
        .setIndex(0)
        .setEpoch(epoch)
        .setGeneration(generation)
        .setSequence(sequence)
        .setBackupLease(REGISTRATION)
        .setRecord(WalRecord.newBuilder().addPushes(push).setInitId(Trainers.INIT_ID))
        .build();
  }

  private CompletableFuture<ReplicateResponse> replicateAsync(ReplicateRequest r) {
    return CompletableFuture.supplyAsync(
        () -> {
          try {
            return backup.replicate(r);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
          }
        },
        callers);
  }

  private void install(long generation, String name) throws Exception {
    Path file = copy(name);
    backup.install(epoch, REGISTRATION, generation, file, crc(file));
  }

  private Path copy(String name) throws IOException {
    Path file = dir.resolve(name);
    try (OutputStream out = Files.newOutputStream(file)) {
      primary.writeCopy(out, () -> {});
    }
    return file;
  }

  private static int crc(Path file) throws IOException {
    CRC32 crc = new CRC32();
    crc.update(Files.readAllBytes(file));
    return (int) crc.getValue();
  }
}
