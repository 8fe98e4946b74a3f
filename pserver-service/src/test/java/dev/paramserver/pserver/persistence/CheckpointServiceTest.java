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
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.PullParametersResponse;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.Poll;
import dev.paramserver.testsupport.TempDirs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CheckpointServiceTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private Path dir;

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    dir = TempDirs.create("ckpt-service");
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  private PserverProperties properties(Duration interval) {
    return TestProperties.of(dir, interval, PserverProperties.Wal.defaults());
  }

  private long checkpointedStep() {
    return coordinator
        .kv()
        .get(coordinator.keys().checkpoint(0))
        .map(
            kv -> {
              try {
                return CheckpointMeta.parseFrom(kv.value()).getStep();
              } catch (Exception e) {
                throw new AssertionError(e);
              }
            })
        .orElse(-1L);
  }

  @Test
  void timer_checkpointsWhileServing_andRecoveryKeepsCheckpointing() {
    ParameterShard shard = new ParameterShard(true);
    shard.indexFrom(() -> 0);
    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 1, 1))));
    shard.finishInit(finish("i", 1));
    CheckpointService service =
        new CheckpointService(shard, coordinator, properties(Duration.ofMillis(100)));
    service.start();
    PullParametersResponse expected;
    try {
      shard.push(push(gradient("w", 0, 1, 1)));
      Poll.until(Duration.ofSeconds(10), () -> checkpointedStep() == 1, "checkpoint at step 1");
      shard.push(push(gradient("w", 0, 1, 1)));
      Poll.until(Duration.ofSeconds(10), () -> checkpointedStep() == 2, "checkpoint at step 2");
      expected = shard.pull(pullAll());
    } finally {
      service.stop();
    }
    assertThat(service.last().step()).isEqualTo(2);

    // A restarted pserver loads index 0 and goes on checkpointing.
    ParameterShard restarted = new ParameterShard(true);
    CheckpointService recovered =
        new CheckpointService(restarted, coordinator, properties(Duration.ofMillis(100)));
    recovered.load(0);
    restarted.indexFrom(() -> 0);
    assertThat(restarted.pull(pullAll())).isEqualTo(expected);
    recovered.start();
    try {
      restarted.push(push(gradient("w", 0, 1, 1)));
      Poll.until(Duration.ofSeconds(10), () -> checkpointedStep() == 3, "checkpoint at step 3");
    } finally {
      recovered.stop();
    }
  }

  @Test
  void checkpointAgeAndDuration_areDefinedFromInitialisation_beforeTheFirstCheckpoint() {
    ParameterShard shard = new ParameterShard(true);
    shard.indexFrom(() -> 0);
    // the write-ahead log off: nothing checkpoints the fresh shard before the test does
    PserverProperties.Wal walOff =
        new PserverProperties.Wal(
            false, PserverProperties.Wal.defaults().sync(), Duration.ofMillis(50), null);
    CheckpointService service =
        new CheckpointService(shard, coordinator, TestProperties.of(dir, Duration.ZERO, walOff));
    long now = System.currentTimeMillis();
    assertThat(service.ageSeconds(now)).isNaN();
    assertThat(service.lastWriteSeconds()).isNaN();

    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 1, 1))));
    shard.finishInit(finish("i", 1));
    long initialised = shard.initialisedAtMs();
    assertThat(initialised).isBetween(now, System.currentTimeMillis());
    assertThat(service.last()).isNull();
    assertThat(service.ageSeconds(initialised + 7_000)).isEqualTo(7.0);
    assertThat(service.lastWriteSeconds()).isZero();

    service.checkpointNow();
    CheckpointService.LastCheckpoint last = service.last();
    assertThat(service.ageSeconds(last.timestampMs() + 2_000)).isEqualTo(2.0);
    assertThat(service.lastWriteSeconds()).isEqualTo(last.writeSeconds()).isNotNaN();
  }

  @Test
  void stop_drainsAndWritesAFinalCheckpoint_evenWithTheTimerOff() {
    ParameterShard shard = new ParameterShard(true);
    shard.indexFrom(() -> 0);
    shard.init(init("i", List.of(dense("w", 2, 2, sgd(1))), List.of(block("w", 0, 2, 1, 1))));
    shard.finishInit(finish("i", 1));
    CheckpointService service =
        new CheckpointService(shard, coordinator, properties(Duration.ZERO));
    service.start();
    shard.push(push(gradient("w", 0, 1, 1)));
    assertThat(checkpointedStep()).isEqualTo(-1);
    assertThat(service.isRunning()).isTrue();
    service.stop();
    assertThat(checkpointedStep()).isEqualTo(1);
  }

  @Test
  void uninitialisedShard_isNotCheckpointed() {
    ParameterShard shard = new ParameterShard(true);
    shard.indexFrom(() -> 0);
    CheckpointService service =
        new CheckpointService(shard, coordinator, properties(Duration.ZERO));
    assertThat(service.checkpointNow()).isEmpty();
    assertThat(checkpointedStep()).isEqualTo(-1);
  }
}
