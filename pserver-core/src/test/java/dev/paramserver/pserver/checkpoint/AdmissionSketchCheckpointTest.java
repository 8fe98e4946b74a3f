package dev.paramserver.pserver.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseTableCheckpoint;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.SparseTableStats;
import dev.paramserver.pserver.sparse.EvictionPolicy;
import dev.paramserver.pserver.sparse.SparseSettings;
import dev.paramserver.tensor.TensorCodec;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Checkpoints (and so the copies a primary sends its backup) carry each table's admission sketch
 * from format version 2; a file of the earlier format (no version, no sketch) still loads, with an
 * empty sketch, and a file of a newer format is refused.
 */
@Timeout(30)
class AdmissionSketchCheckpointTest {
  private static final int THRESHOLD = 3;
  private final Path dir = TempDirs.create("sketch-ckpt");

  @AfterEach
  void tearDown() {
    TempDirs.deleteRecursively(dir);
  }

  private static ParameterShard shard() {
    return new ParameterShard(
        true,
        new SparseSettings(
            Long.MAX_VALUE,
            Map.of(),
            null,
            EvictionPolicy.lfu(Duration.ofHours(1)),
            8,
            THRESHOLD,
            256));
  }

  private static void initialise(ParameterShard shard) {
    ParameterSpec emb =
        ParameterSpec.newBuilder()
            .setName("emb")
            .addShape(0)
            .addShape(2)
            .setDtype(DataType.FLOAT32)
            .setSparse(true)
            .setOptimizer(
                OptimizerConfig.newBuilder()
                    .setKind(OptimizerConfig.Kind.SGD)
                    .setLearningRate(0.5f)
                    .build())
            .build();
    shard.init(
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId("i")
            .addParameters(emb)
            .build());
    shard.finishInit(FinishInitRequest.newBuilder().setTrainerId("t0").setInitId("i").build());
  }

  private static void push(ParameterShard shard, long... ids) {
    shard.push(
        PushGradientsRequest.newBuilder()
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName("emb")
                    .addAllRowIds(java.util.Arrays.stream(ids).boxed().toList())
                    .setDtype(DataType.FLOAT32)
                    .setData(TensorCodec.encode(new float[2 * ids.length])))
            .build());
  }

  private static long rows(ParameterShard shard) {
    return shard.sparseTable("emb").map(SparseTableStats::rows).orElseThrow();
  }

  /** Writes {@code cp} as a file and loads it into a fresh shard, as a restart does. */
  private ParameterShard load(ShardCheckpoint cp, String name) throws IOException {
    Path file = dir.resolve(name);
    byte[] bytes = cp.toByteArray();
    Files.write(file, bytes);
    CRC32 crc = new CRC32();
    crc.update(bytes);
    ParameterShard fresh = shard();
    CheckpointStore.Restorer restorer = CheckpointStore.restorer(fresh);
    restorer.install(CheckpointStore.read(file.toString(), (int) crc.getValue(), restorer));
    return fresh;
  }

  @Test
  void checkpoint_carriesTheSketch_soARestoredShardAdmitsWhatTheOriginalWould() throws Exception {
    ParameterShard original = shard();
    initialise(original);
    for (int i = 0; i < THRESHOLD - 1; i++) {
      push(original, 1, 2, 3);
    }
    assertThat(rows(original)).as("ids below the threshold have no row").isZero();
    ShardCheckpoint cp = original.snapshot();
    assertThat(cp.getFormatVersion()).isEqualTo(3);
    SparseTableCheckpoint table = cp.getSparseTables(0);
    assertThat(table.getAdmissionSketchCount()).isPositive();
    assertThat(table.getAdmissionIncrementsCount()).isEqualTo(table.getAdmissionSketchCount());

    ParameterShard restored = load(cp, "v2.ckpt");
    assertThat(restored.snapshot().getSparseTables(0).getAdmissionSketchList())
        .isEqualTo(table.getAdmissionSketchList());
    push(original, 1);
    push(restored, 1);
    // before: the sketch was not in the file, the restored shard refused id 1 for two more pushes
    assertThat(rows(restored)).as("id 1 admitted at its third push after the restore").isOne();
    assertThat(restored.snapshot().getSparseTablesList())
        .isEqualTo(original.snapshot().getSparseTablesList());
  }

  @Test
  void fileOfTheEarlierFormat_withoutVersionOrSketch_loadsWithAnEmptySketch() throws Exception {
    ParameterShard original = shard();
    initialise(original);
    for (int i = 0; i < THRESHOLD; i++) {
      push(original, 1);
    }
    push(original, 2);
    ShardCheckpoint.Builder old = original.snapshot().toBuilder().clearFormatVersion();
    for (SparseTableCheckpoint.Builder t : old.getSparseTablesBuilderList()) {
      t.clearAdmissionSketch().clearAdmissionIncrements();
    }

    ParameterShard restored = load(old.build(), "v0.ckpt");
    assertThat(restored.step()).isEqualTo(original.step());
    assertThat(rows(restored)).as("the row of id 1").isOne();
    push(restored, 2);
    assertThat(rows(restored)).as("id 2 counts from zero again: an empty sketch").isOne();
  }

  @Test
  void fileOfANewerFormat_isRefused() {
    ParameterShard original = shard();
    initialise(original);
    ShardCheckpoint newer = original.snapshot().toBuilder().setFormatVersion(4).build();
    assertThatThrownBy(() -> load(newer, "v4.ckpt")).hasMessageContaining("format version 4");
  }
}
