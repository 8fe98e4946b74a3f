package dev.paramserver.pserver.persistence;

import static dev.paramserver.pserver.shard.Requests.block;
import static dev.paramserver.pserver.shard.Requests.dense;
import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.gradient;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.pullAll;
import static dev.paramserver.pserver.shard.Requests.push;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.wal.WriteAheadLog;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A pserver that crashes (its checkpoint service is never stopped) comes back with every push it
 * acknowledged: the newest checkpoint plus the write-ahead log, against a real etcd.
 */
class WalRecoveryTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private Path dir;

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    dir = TempDirs.create("wal-recovery");
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  private PserverProperties properties(boolean wal) {
    return TestProperties.of(
        dir,
        Duration.ZERO,
        new PserverProperties.Wal(
            wal, WriteAheadLog.SyncMode.NONE, Duration.ofMillis(50), dir.resolve("wal")));
  }

  private record Pserver(ParameterShard shard, CheckpointService service) {}

  /** Claims index 0 and loads it, as registration does. */
  private Pserver start(boolean wal) {
    ParameterShard shard = new ParameterShard(true);
    CheckpointService service = new CheckpointService(shard, coordinator, properties(wal));
    shard.indexFrom(() -> 0);
    service.load(0);
    return new Pserver(shard, service);
  }

  private static PushGradientsRequest step(long s, float g) {
    return push(gradient("w", 0, g, -g)).toBuilder().setSession("run").setStep(s).build();
  }

  private long segments() throws IOException {
    try (Stream<Path> files = Files.list(dir.resolve("wal"))) {
      return files.count();
    }
  }

  @Test
  void crash_losesNoAcknowledgedPush_andRetriesAfterItAreDuplicates() throws IOException {
    Pserver a = start(true);
    a.shard().init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 0, 0))));
    a.shard().finishInit(finish("i", 1));
    for (int s = 1; s <= 5; s++) {
      a.shard().push(step(s, s));
    }
    a.service().checkpointNow();
    for (int s = 6; s <= 9; s++) {
      a.shard().push(step(s, s));
    }
    a.service().checkpointNow();
    for (int s = 10; s <= 12; s++) {
      a.shard().push(step(s, s));
    }
    // the init checkpoint's segment is gone; the previous checkpoint's and later ones stay
    assertThat(segments()).isEqualTo(2);
    // crash: nothing is stopped or closed

    Pserver b = start(true);

    assertThat(b.shard().step()).isEqualTo(12);
    assertThat(b.shard().pull(pullAll())).isEqualTo(a.shard().pull(pullAll()));
    // w = 0 - (1 + 2 + ... + 12) and 0 + (1 + ... + 12), exactly
    assertThat(
            b.shard()
                .pull(pullAll())
                .getBlocks(0)
                .getData()
                .asReadOnlyByteBuffer()
                .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                .getFloat(0))
        .isEqualTo(-78f);
    assertThat(b.shard().pushOutcome(step(12, 12)).duplicate()).isTrue();
    assertThat(b.shard().pushOutcome(step(13, 1)).duplicate()).isFalse();

    // and a second crash right after the restart loses nothing either
    Pserver c = start(true);
    assertThat(c.shard().pull(pullAll())).isEqualTo(b.shard().pull(pullAll()));
    c.service().stop();
  }

  @Test
  void crashBeforeTheFirstTimedCheckpoint_keepsThePushesAfterInit() {
    Pserver a = start(true);
    a.shard().init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 5, 5))));
    a.shard().finishInit(finish("i", 1));
    a.shard().push(step(1, 2));

    Pserver b = start(true);

    assertThat(b.shard().initialised()).isTrue();
    assertThat(b.shard().pull(pullAll())).isEqualTo(a.shard().pull(pullAll()));
    b.service().stop();
  }

  @Test
  void unreadableCheckpoint_atRestart_isRetriedThenRefused_andTheLogIsKept() throws IOException {
    Pserver a = start(true);
    a.shard().init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 5, 5))));
    a.shard().finishInit(finish("i", 1));
    a.shard().push(step(1, 2));
    a.service().checkpointNow();
    a.shard().push(step(2, 2));
    long before = segments();
    // no checkpoint can be read (a storage error: the files are gone, the previous one too)
    java.util.Map<Path, byte[]> saved = new java.util.HashMap<>();
    try (Stream<Path> files = Files.list(dir)) {
      for (Path f : files.filter(f -> f.toString().endsWith(".ckpt")).toList()) {
        saved.put(f, Files.readAllBytes(f));
        Files.delete(f);
      }
    }
    assertThat(saved).isNotEmpty();

    org.assertj.core.api.Assertions.assertThatThrownBy(() -> start(true))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("cannot read the checkpoint")
        .hasMessageContaining("does not start empty");
    assertThat(segments()).as("the log's files").isEqualTo(before);

    // the storage is back: the next claim loads the checkpoint and replays the log
    for (var e : saved.entrySet()) {
      Files.write(e.getKey(), e.getValue());
    }
    Pserver b = start(true);
    assertThat(b.shard().step()).isEqualTo(2);
    assertThat(b.shard().pull(pullAll())).isEqualTo(a.shard().pull(pullAll()));
    b.service().stop();
  }

  @Test
  void withoutTheLog_aCrashFallsBackToTheCheckpoint() {
    Pserver a = start(false);
    a.shard().init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 5, 5))));
    a.shard().finishInit(finish("i", 1));
    a.shard().push(step(1, 2));
    a.service().checkpointNow();
    a.shard().push(step(2, 2));

    Pserver b = start(false);

    assertThat(b.shard().step()).isEqualTo(1);
  }
}
