package dev.paramserver.pserver.checkpoint;

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
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.pserver.persistence.EtcdCheckpointPointers;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.TempDirs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class CheckpointStoreTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();

  private EtcdCoordinator coordinator;
  private Path dir;
  private CheckpointStore store;

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    dir = TempDirs.create("ckpt-store");
    store =
        new CheckpointStore(new EtcdCheckpointPointers(coordinator.kv(), coordinator.keys()), dir);
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  /** An Adam shard with two pushes applied (so its slots are non-trivial). */
  private static ParameterShard adamShard() {
    ParameterShard shard = new ParameterShard(true);
    OptimizerConfig adam =
        OptimizerConfig.newBuilder()
            .setKind(OptimizerConfig.Kind.ADAM)
            .setLearningRate(0.1f)
            .build();
    InitParametersRequest request =
        init(
                "i7",
                List.of(dense("w", 5, 3, adam)),
                List.of(block("w", 0, 3, 1, 2, 3), block("w", 1, 3, 4, 5)))
            .toBuilder()
            .build();
    shard.init(request);
    shard.finishInit(finish("i7", 2));
    shard.push(push(gradient("w", 0, 1, -1, 2), gradient("w", 1, 3, 3)));
    shard.push(push(gradient("w", 0, 0.5f, 0.5f, -2)));
    shard.indexFrom(() -> 3);
    return shard;
  }

  private CheckpointMeta meta(int index) throws Exception {
    return CheckpointMeta.parseFrom(
        coordinator.kv().get(coordinator.keys().checkpoint(index)).orElseThrow().value());
  }

  @Test
  void restoredShard_continuesExactlyLikeTheOriginal() {
    ParameterShard original = adamShard();
    CheckpointMeta meta = store.write(3, original.snapshot());
    assertThat(meta.getStep()).isEqualTo(2);
    CheckpointStore.Loaded loaded = store.load(3).orElseThrow();
    assertThat(loaded.fallback()).isFalse();

    ParameterShard restored = new ParameterShard(true);
    restored.restore(loaded.checkpoint());
    assertThat(restored.initialised()).isTrue();
    assertThat(restored.initId()).isEqualTo("i7");
    assertThat(restored.step()).isEqualTo(2);
    assertThat(restored.pull(pullAll())).isEqualTo(original.pull(pullAll()));
    // The same gradient gives the same result only if the Adam moments and update counts survived.
    original.push(push(gradient("w", 0, -1, 2, 0.25f)));
    restored.push(push(gradient("w", 0, -1, 2, 0.25f)));
    assertThat(restored.pull(pullAll())).isEqualTo(original.pull(pullAll()));
  }

  @Test
  void trainingMode_survivesACheckpoint() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init("s", List.of(dense("w", 2, 2, sgd(1))), List.of()).toBuilder()
            .setMode(TrainingMode.BOUNDED_STALENESS)
            .setStaleness(4)
            .build());
    shard.finishInit(finish("s", 0));
    store.write(2, shard.snapshot());
    ParameterShard restored = new ParameterShard(true);
    restored.restore(store.load(2).orElseThrow().checkpoint());
    assertThat(restored.mode()).isEqualTo(TrainingMode.BOUNDED_STALENESS);
    assertThat(restored.status().getMode()).isEqualTo(TrainingMode.BOUNDED_STALENESS);
  }

  @Test
  void newCheckpoints_keepThePreviousFile_andDeleteOlderOnesOnlyAfterTheSwap() throws Exception {
    ParameterShard shard = adamShard();
    CheckpointMeta first = store.write(3, shard.snapshot());
    shard.push(push(gradient("w", 1, 1, 1)));
    CheckpointMeta second = store.write(3, shard.snapshot());
    assertThat(second.getPreviousPath()).isEqualTo(first.getPath());
    assertThat(second.getPreviousCrc32()).isEqualTo(first.getCrc32());
    assertThat(meta(3)).isEqualTo(second);
    assertThat(Files.exists(Path.of(first.getPath()))).isTrue();

    shard.push(push(gradient("w", 1, 1, 1)));
    CheckpointMeta third = store.write(3, shard.snapshot());
    assertThat(third.getStep()).isEqualTo(4);
    assertThat(Files.exists(Path.of(first.getPath()))).isFalse();
    assertThat(Files.exists(Path.of(second.getPath()))).isTrue();
    assertThat(Files.exists(Path.of(third.getPath()))).isTrue();
    try (var files = Files.list(dir)) {
      assertThat(files.filter(p -> p.getFileName().toString().startsWith(".tmp"))).isEmpty();
    }
  }

  @Test
  void corruptNewest_fallsBackToThePrevious() throws Exception {
    ParameterShard shard = adamShard();
    store.write(3, shard.snapshot());
    shard.push(push(gradient("w", 1, 1, 1)));
    CheckpointMeta newest = store.write(3, shard.snapshot());
    flipAByte(Path.of(newest.getPath()));

    CheckpointStore.Loaded loaded = store.load(3).orElseThrow();
    assertThat(loaded.fallback()).isTrue();
    assertThat(loaded.path()).isEqualTo(newest.getPreviousPath());
    assertThat(loaded.checkpoint().getStep()).isEqualTo(2);
  }

  @Test
  void missingNewestAndCorruptPrevious_loadNothing() throws Exception {
    ParameterShard shard = adamShard();
    CheckpointMeta first = store.write(3, shard.snapshot());
    CheckpointMeta second = store.write(3, shard.snapshot());
    Files.delete(Path.of(second.getPath()));
    flipAByte(Path.of(first.getPath()));
    assertThat(store.load(3)).isEmpty();
  }

  @Test
  void noMetadata_loadsNothing() {
    assertThat(store.load(0)).isEmpty();
  }

  @Test
  void truncatedFile_isDetectedByTheCrc() throws Exception {
    CheckpointMeta meta = store.write(1, adamShard().snapshot());
    Path file = Path.of(meta.getPath());
    byte[] bytes = Files.readAllBytes(file);
    Files.write(file, java.util.Arrays.copyOf(bytes, bytes.length - 3));
    Optional<CheckpointStore.Loaded> loaded = store.load(1);
    assertThat(loaded).isEmpty();
  }

  private static void flipAByte(Path file) throws Exception {
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length / 2] ^= 0x5A;
    Files.write(file, bytes, StandardOpenOption.TRUNCATE_EXISTING);
  }
}
