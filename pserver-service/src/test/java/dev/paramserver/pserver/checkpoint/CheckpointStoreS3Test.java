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
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.pserver.PserverProperties;
import dev.paramserver.pserver.persistence.EtcdCheckpointPointers;
import dev.paramserver.pserver.persistence.TestProperties;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.storage.S3Settings;
import dev.paramserver.storage.Storage;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.S3Server;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Checkpoints in a real S3-compatible server (s3proxy), their pointer in a real etcd. */
class CheckpointStoreS3Test {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static S3Server s3;
  private static Storage storage;

  private EtcdCoordinator coordinator;
  private CheckpointStore store;
  private String prefix;

  @BeforeAll
  static void startS3() {
    s3 = S3Server.start();
    s3.createBucket("ckpt");
    storage =
        Storage.create(
            new S3Settings(s3.endpoint(), null, true, S3Server.ACCESS_KEY, S3Server.SECRET_KEY),
            "paramserver.pserver.s3");
  }

  @AfterAll
  static void stopS3() {
    storage.close();
    s3.close();
  }

  @BeforeEach
  void setUp() {
    String job = etcd.uniqueJob();
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), job));
    prefix = "s3://ckpt/" + job;
    store =
        new CheckpointStore(
            new EtcdCheckpointPointers(coordinator.kv(), coordinator.keys()), prefix, storage);
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
  }

  private static ParameterShard shard(float lr) {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init("s", List.of(dense("w", 5, 3, sgd(lr))), List.of(block("w", 0, 3, 1, 2, 3)))
            .toBuilder()
            .build());
    shard.finishInit(finish("s", 1));
    shard.push(push(gradient("w", 0, 1, -1, 2)));
    return shard;
  }

  private List<Path> objects() throws Exception {
    Path dir = s3.bucketDir("ckpt").resolve(prefix.substring("s3://ckpt/".length()));
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".ckpt")).sorted().toList();
    }
  }

  @Test
  void writeThenLoad_roundTripsThroughTheBucket_andEtcdPointsAtTheObject() throws Exception {
    ParameterShard original = shard(0.5f);
    CheckpointMeta meta = store.write(4, original.snapshot());
    assertThat(meta.getPath()).startsWith(prefix + "/ps-4-step1-").endsWith(".ckpt");
    assertThat(storage.exists(meta.getPath())).isTrue();

    CheckpointStore.Loaded loaded = store.load(4).orElseThrow();
    assertThat(loaded.fallback()).isFalse();
    assertThat(loaded.path()).isEqualTo(meta.getPath());
    ParameterShard restored = new ParameterShard(true);
    restored.restore(loaded.checkpoint());
    assertThat(restored.pull(pullAll())).isEqualTo(original.pull(pullAll()));
  }

  @Test
  void newerCheckpoints_deleteTheOneBeforeThePrevious() throws Exception {
    ParameterShard shard = shard(0.5f);
    CheckpointMeta first = store.write(1, shard.snapshot());
    shard.push(push(gradient("w", 0, 1, 1, 1)));
    CheckpointMeta second = store.write(1, shard.snapshot());
    shard.push(push(gradient("w", 0, 1, 1, 1)));
    CheckpointMeta third = store.write(1, shard.snapshot());

    assertThat(storage.exists(first.getPath())).isFalse();
    assertThat(storage.exists(second.getPath())).isTrue();
    assertThat(third.getPreviousPath()).isEqualTo(second.getPath());
    assertThat(objects()).hasSize(2);
  }

  @Test
  void corruptNewestObject_failsItsCrc_andLoadFallsBackToThePrevious() throws Exception {
    ParameterShard shard = shard(0.5f);
    store.write(2, shard.snapshot());
    shard.push(push(gradient("w", 0, 1, 1, 1)));
    CheckpointMeta newest = store.write(2, shard.snapshot());
    // flip a byte of the newest object where the store keeps it
    Path file = s3.bucketDir("ckpt").resolve(newest.getPath().substring("s3://ckpt/".length()));
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 1] ^= 0x55;
    Files.write(file, bytes);

    CheckpointStore.Loaded loaded = store.load(2).orElseThrow();
    assertThat(loaded.fallback()).isTrue();
    assertThat(loaded.checkpoint().getStep()).isEqualTo(1);
  }

  @Test
  void missingNewestObject_fallsBackToThePrevious() throws Exception {
    ParameterShard shard = shard(0.5f);
    store.write(3, shard.snapshot());
    shard.push(push(gradient("w", 0, 1, 1, 1)));
    CheckpointMeta newest = store.write(3, shard.snapshot());
    storage.delete(newest.getPath());

    CheckpointStore.Loaded loaded = store.load(3).orElseThrow();
    assertThat(loaded.fallback()).isTrue();
    assertThat(loaded.path()).isEqualTo(newest.getPreviousPath());
  }

  @Test
  void s3CheckpointDir_withTheLogOnAndNoLocalLogDir_isRefusedNamingBothProperties() {
    assertThatThrownBy(
            () -> TestProperties.of("s3://ckpt/x", Duration.ZERO, PserverProperties.Wal.defaults()))
        .hasMessageContaining("paramserver.pserver.wal.dir")
        .hasMessageContaining("paramserver.pserver.checkpoint-dir is an s3:// URI (s3://ckpt/x)");
  }
}
