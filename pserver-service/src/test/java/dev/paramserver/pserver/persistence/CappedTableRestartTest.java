package dev.paramserver.pserver.persistence;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.etcd.EtcdCoordinator;
import dev.paramserver.etcd.EtcdSettings;
import dev.paramserver.proto.v1.CheckpointMeta;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.pserver.checkpoint.CheckpointStore;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseBudget;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.EtcdExtension;
import dev.paramserver.testsupport.TempDirs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A pserver restart from a streamed checkpoint restores a capped sparse table exactly. */
@Timeout(60)
class CappedTableRestartTest {
  @RegisterExtension static final EtcdExtension etcd = new EtcdExtension();
  private static final int CAP = 500;

  private EtcdCoordinator coordinator;
  private Path dir;
  private CheckpointStore store;

  @BeforeEach
  void setUp() {
    coordinator = EtcdCoordinator.connect(EtcdSettings.of(etcd.endpoint(), etcd.uniqueJob()));
    dir = TempDirs.create("ckpt-capped");
    store =
        new CheckpointStore(new EtcdCheckpointPointers(coordinator.kv(), coordinator.keys()), dir);
  }

  @AfterEach
  void tearDown() {
    coordinator.close();
    TempDirs.deleteRecursively(dir);
  }

  @Test
  void corruptNewestCheckpoint_streamedRestoreFallsBackToThePrevious_andGivesItsRowsBack()
      throws Exception {
    SparseBudget budget = new SparseBudget(1L << 30);
    SparseSettings settings =
        new SparseSettings(
            Long.MAX_VALUE, Map.of(), budget, EvictionPolicy.lfu(Duration.ofMinutes(10)), 8, 1, 16);
    ParameterShard shard = new ParameterShard(true, settings);
    shard.init(init("i1", List.of(table("wide", 2)), List.of()));
    shard.finishInit(finish("i1", 0));
    shard.indexFrom(() -> 4);
    long[] ids = new long[20_000];
    for (int i = 0; i < ids.length; i++) {
      ids[i] = i;
    }
    shard.push(push("wide", 2, ids, 1));
    store.write(4, shard::writeCheckpoint);
    ShardCheckpoint previous = shard.snapshot();
    for (int i = 0; i < ids.length; i++) {
      ids[i] = 100_000 + i;
    }
    shard.push(push("wide", 2, ids, 2));
    CheckpointMeta newest = store.write(4, shard::writeCheckpoint);
    // Damage the newest file near its end: every table entry but the last parses, the CRC fails.
    Path file = Path.of(newest.getPath());
    byte[] bytes = Files.readAllBytes(file);
    bytes[bytes.length - 3] ^= 0x5a;
    Files.write(file, bytes);
    long usedByOriginal = budget.used();

    ParameterShard restarted = new ParameterShard(true, settings);
    restarted.indexFrom(() -> 4);
    CheckpointStore.Loaded loaded =
        store.load(4, () -> CheckpointService.restorer(restarted)).orElseThrow();

    assertThat(loaded.fallback()).isTrue();
    assertThat(withoutTime(restarted.snapshot())).isEqualTo(withoutTime(previous));
    assertThat(restarted.sparseTable("wide").orElseThrow().rows()).isEqualTo(20_000);
    // The rows staged from the damaged file were given back to the shared budget.
    assertThat(budget.used() - usedByOriginal)
        .isEqualTo(20_000 * SparseSettings.rowBytes(2, 2)); // Adam: two slots
  }

  private static SparseSettings cappedEmb() {
    return new SparseSettings(
        Long.MAX_VALUE,
        Map.of("emb", new SparseSettings.TableCap(CAP, Long.MAX_VALUE)),
        null,
        EvictionPolicy.lfu(Duration.ofMinutes(10)),
        8,
        1,
        1 << 16);
  }

  private static ParameterSpec table(String name, int width) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(0)
        .addShape(width)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(0.1f)
        .setOptimizer(
            OptimizerConfig.newBuilder().setKind(OptimizerConfig.Kind.ADAM).setLearningRate(0.01f))
        .build();
  }

  private static PushGradientsRequest push(String table, int width, long[] ids, float scale) {
    float[] g = new float[ids.length * width];
    for (int i = 0; i < g.length; i++) {
      g[i] = scale * ((i % 7) - 3);
    }
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(table)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(g));
    for (long id : ids) {
      rows.addRowIds(id);
    }
    return PushGradientsRequest.newBuilder().setTrainerId("t").addSparseGradients(rows).build();
  }

  private static float[] pull(ParameterShard shard, String table, long id) {
    PullParametersRequest r =
        PullParametersRequest.newBuilder()
            .addSparseRows(SparseRowsRef.newBuilder().setName(table).addRowIds(id))
            .build();
    return TensorCodec.decode(shard.pull(r).getSparseRows(0).getData());
  }

  private static ShardCheckpoint withoutTime(ShardCheckpoint cp) {
    return cp.toBuilder().clearCreatedMs().build();
  }

  @Test
  void restart_restoresACappedTableExactly_fromAStreamedMultiEntryCheckpoint() {
    ParameterShard shard = new ParameterShard(true, cappedEmb());
    shard.init(init("i1", List.of(table("emb", 4), table("wide", 1)), List.of()));
    shard.finishInit(finish("i1", 0));
    shard.indexFrom(() -> 3);
    SplittableRandom random = new SplittableRandom(11);
    for (int p = 0; p < 200; p++) {
      long[] ids = new long[32];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = random.nextInt(5_000);
      }
      shard.push(push("emb", 4, ids, 0.1f + p));
    }
    // An uncapped table large enough to be written as several entries.
    for (int p = 0; p < 40; p++) {
      long[] ids = new long[1_000];
      for (int i = 0; i < ids.length; i++) {
        ids[i] = p * 1_000L + i;
      }
      shard.push(push("wide", 1, ids, 1));
    }
    assertThat(shard.sparseTable("emb").orElseThrow().rows()).isEqualTo(CAP);
    assertThat(shard.sparseTable("emb").orElseThrow().evictions()).isPositive();

    store.write(3, shard::writeCheckpoint);
    ParameterShard restarted = new ParameterShard(true, cappedEmb());
    restarted.indexFrom(() -> 3);
    assertThat(store.load(3, () -> CheckpointService.restorer(restarted))).isPresent();

    ShardCheckpoint before = shard.snapshot();
    assertThat(before.getSparseTablesList().stream().filter(t -> t.getName().equals("wide")))
        .hasSizeGreaterThan(1);
    assertThat(withoutTime(restarted.snapshot())).isEqualTo(withoutTime(before));
    assertThat(restarted.sparseTable("emb").orElseThrow().rows()).isEqualTo(CAP);
    assertThat(restarted.sparseTable("wide").orElseThrow().rows()).isEqualTo(40_000);
    // Rows held read the same; an evicted id reads as a fresh row in both.
    SparseTableCheckpoint emb =
        before.getSparseTablesList().stream()
            .filter(t -> t.getName().equals("emb"))
            .findFirst()
            .orElseThrow();
    long held = emb.getRowIds(0);
    assertThat(pull(restarted, "emb", held)).containsExactly(pull(shard, "emb", held));
    long evicted = -1;
    for (long id = 0; id < 5_000 && evicted < 0; id++) {
      if (!emb.getRowIdsList().contains(id)) {
        evicted = id;
      }
    }
    assertThat(pull(restarted, "emb", evicted)).containsExactly(pull(shard, "emb", evicted));
  }
}
