package dev.paramserver.models.demo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.models.Dataset;
import dev.paramserver.proto.v1.Example;
import dev.paramserver.recordio.Compressor;
import dev.paramserver.recordio.RecordIndex;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DemoDataTest {
  @TempDir Path dir;

  private static List<Example> examples(Path file) throws IOException {
    return Dataset.readGlobs(List.of(file.toString()));
  }

  private static DemoData.Options.Builder small() {
    return DemoData.Options.builder().train(4000).test(2000).recordsPerChunk(250).shards(2);
  }

  @Test
  void sameSeed_identicalBytes_otherSeed_differentBytes() throws Exception {
    DemoData.Result a = DemoData.generate(dir.resolve("a"), small().build());
    DemoData.Result b = DemoData.generate(dir.resolve("b"), small().build());
    DemoData.Result c = DemoData.generate(dir.resolve("c"), small().seed(7).build());
    for (int i = 0; i < 2; i++) {
      assertThat(Files.readAllBytes(a.trainFiles().get(i)))
          .isEqualTo(Files.readAllBytes(b.trainFiles().get(i)))
          .isNotEqualTo(Files.readAllBytes(c.trainFiles().get(i)));
    }
    assertThat(Files.readAllBytes(a.testFile())).isEqualTo(Files.readAllBytes(b.testFile()));
  }

  @Test
  void layout_filesShardsAndChunks() throws Exception {
    DemoData.Result r = DemoData.generate(dir, small().compressor(Compressor.GZIP).build());
    assertThat(r.trainFiles())
        .containsExactly(dir.resolve("train-00000.recordio"), dir.resolve("train-00001.recordio"));
    assertThat(r.testFile()).isEqualTo(dir.resolve("test-00000.recordio"));
    assertThat(RecordIndex.scan(r.trainFiles().get(0))).hasSize(8); // 2000 records / 250
    List<Example> test = examples(r.testFile());
    assertThat(test).hasSize(2000).allMatch(e -> e.getDenseCount() == 32);
    assertThat(test).extracting(Example::getLabel).containsOnly(0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  }

  /** Class means estimated from the train files classify the test file nearly perfectly. */
  @Test
  void dense_nearestMeanAccuracy_isHigh() throws Exception {
    DemoData.Result r = DemoData.generate(dir, small().build());
    int classes = 10;
    int dims = 32;
    double[][] sum = new double[classes][dims];
    int[] n = new int[classes];
    for (Path f : r.trainFiles()) {
      for (Example e : examples(f)) {
        n[e.getLabel()]++;
        for (int j = 0; j < dims; j++) {
          sum[e.getLabel()][j] += e.getDense(j);
        }
      }
    }
    int correct = 0;
    List<Example> test = examples(r.testFile());
    for (Example e : test) {
      int best = -1;
      double bestD = Double.MAX_VALUE;
      for (int c = 0; c < classes; c++) {
        double d = 0;
        for (int j = 0; j < dims; j++) {
          double diff = e.getDense(j) - sum[c][j] / n[c];
          d += diff * diff;
        }
        if (d < bestD) {
          bestD = d;
          best = c;
        }
      }
      correct += best == e.getLabel() ? 1 : 0;
    }
    double acc = (double) correct / test.size();
    assertThat(acc).isGreaterThanOrEqualTo(0.95).isLessThan(0.999);
    assertThat(r.oracleTestAccuracy()).isGreaterThanOrEqualTo(0.95);
    // labels roughly balanced
    assertThat(Arrays.stream(n).min().getAsInt()).isGreaterThan(4000 / classes / 2);
  }

  @Test
  void sparse_binaryHashedIds_learnableButNoisy() throws Exception {
    DemoData.Result r =
        DemoData.generate(dir, small().sparse(true).fields(20).hashBits(16).build());
    assertThat(r.classes()).isEqualTo(2);
    assertThat(r.features()).isEqualTo(1 << 16);
    List<Example> train = new ArrayList<>();
    for (Path f : r.trainFiles()) {
      train.addAll(examples(f));
    }
    assertThat(train)
        .allMatch(
            e ->
                e.getSparseIdsCount() == 20
                    && e.getSparseValuesCount() == 20
                    && e.getDenseCount() == 0
                    && e.getSparseIdsList().stream().allMatch(id -> id >= 0 && id < (1 << 16)));
    long positives = train.stream().filter(e -> e.getLabel() == 1).count();
    assertThat(positives).isBetween(train.size() / 5L, train.size() * 4L / 5);
    assertThat(train).extracting(Example::getLabel).containsOnly(0, 1);
    // the hidden model predicts well, but labels are Bernoulli draws, not a deterministic function
    assertThat(r.oracleTestAccuracy()).isBetween(0.75, 0.97);
  }
}
