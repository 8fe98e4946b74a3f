package dev.paramserver.bench.sparse;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.tensor.TensorCodec;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The requests of the sparse-table benchmarks: Adam tables of a given width, and pushes and pulls
 * of batches of Zipf-distributed ids (rank r drawn with weight 1 / (r + 1)^1.1, ids scattered over
 * the id space), the same in one JVM and over the wire.
 */
final class SparseWorkload {
  static final double ZIPF_EXPONENT = 1.1;
  static final OptimizerConfig ADAM =
      OptimizerConfig.newBuilder()
          .setKind(OptimizerConfig.Kind.ADAM)
          .setLearningRate(1e-3f)
          .build();

  private final double[] cdf;
  private final SplittableRandom random;

  SparseWorkload(int distinctIds, long seed) {
    cdf = new double[distinctIds];
    double sum = 0;
    for (int r = 0; r < distinctIds; r++) {
      sum += 1 / Math.pow(r + 1, ZIPF_EXPONENT);
      cdf[r] = sum;
    }
    for (int r = 0; r < distinctIds; r++) {
      cdf[r] /= sum;
    }
    random = new SplittableRandom(seed);
  }

  /** The id of rank {@code rank}, scattered so that hot ids are not neighbours. */
  static long id(long rank) {
    return (rank * 0x9E3779B97F4A7C15L) >>> 1;
  }

  long[] nextBatch(int rows) {
    long[] ids = new long[rows];
    for (int i = 0; i < rows; i++) {
      int r = Arrays.binarySearch(cdf, random.nextDouble());
      ids[i] = id(r < 0 ? Math.min(cdf.length - 1, -r - 1) : r);
    }
    return ids;
  }

  static String table(int width) {
    return "emb" + width;
  }

  static InitParametersRequest init(String initId, int... widths) {
    InitParametersRequest.Builder b =
        InitParametersRequest.newBuilder().setTrainerId("bench").setInitId(initId);
    for (int w : widths) {
      b.addParameters(
          ParameterSpec.newBuilder()
              .setName(table(w))
              .addShape(0)
              .addShape(w)
              .setDtype(DataType.FLOAT32)
              .setSparse(true)
              .setInitStddev(0.01f)
              .setOptimizer(ADAM));
    }
    return b.build();
  }

  static FinishInitRequest finish(String initId) {
    return FinishInitRequest.newBuilder()
        .setTrainerId("bench")
        .setInitId(initId)
        .setExpectedBlocks(0)
        .build();
  }

  static PushGradientsRequest push(int width, long[] ids) {
    float[] g = new float[ids.length * width];
    Arrays.fill(g, 1e-3f);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("bench")
        .addSparseGradients(
            SparseRows.newBuilder()
                .setName(table(width))
                .setDtype(DataType.FLOAT32)
                .addAllRowIds(Arrays.stream(ids).boxed().toList())
                .setData(TensorCodec.encode(g)))
        .build();
  }

  static PullParametersRequest pull(int width, long[] ids) {
    return PullParametersRequest.newBuilder()
        .addSparseRows(
            SparseRowsRef.newBuilder()
                .setName(table(width))
                .addAllRowIds(Arrays.stream(ids).boxed().toList()))
        .build();
  }

  /** Pre-built requests, so that building them is not measured. */
  static List<long[]> batches(SparseWorkload w, int count, int rows) {
    return IntStream.range(0, count).mapToObj(i -> w.nextBatch(rows)).toList();
  }
}
