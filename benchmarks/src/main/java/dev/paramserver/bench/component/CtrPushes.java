package dev.paramserver.bench.component;

import dev.paramserver.bench.train.CtrData;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.tensor.TensorCodec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The click-through workload's sparse pushes, as the training section's ctr job sends them to one
 * pserver: sparse-lr with an 8-wide embedding, {@value CtrData#FIELDS} Zipf fields over 10M ids,
 * batches of 256 records; each push carries the distinct ids of its batch in both tables ({@code
 * wide}, width 1, and {@code emb}, width 8), SGD at the workload's learning rate, with the rows
 * after the push asked back ({@code return_rows}), identified by trainer, session and step, as a
 * streaming trainer sends them.
 */
final class CtrPushes {
  static final String WIDE = "wide";
  static final String EMB = "emb";
  static final int EMB_WIDTH = 8;
  static final int BATCH = 256;
  static final float LR = 0.05f;
  static final long IDS = 10_000_000L;

  /** The distinct ids of each batch, in order of first use. */
  final List<long[]> batches;

  /** {@code count} batches of the ctr data's records (seeded, the same every run). */
  CtrPushes(int count) {
    CtrData data = new CtrData(IDS);
    SplittableRandom r = new SplittableRandom(1);
    long[] record = new long[BATCH * CtrData.FIELDS];
    List<long[]> out = new ArrayList<>(count);
    for (int b = 0; b < count; b++) {
      for (int i = 0; i < BATCH; i++) {
        data.ids(r, record, i * CtrData.FIELDS);
      }
      out.add(distinct(record));
    }
    this.batches = List.copyOf(out);
  }

  /** The distinct values of {@code ids} in order of first occurrence. */
  static long[] distinct(long[] ids) {
    long[] sorted = ids.clone();
    Arrays.sort(sorted);
    long[] out = new long[ids.length];
    int n = 0;
    boolean[] taken = new boolean[ids.length];
    for (long id : ids) {
      int at = Arrays.binarySearch(sorted, id);
      while (at > 0 && sorted[at - 1] == id) {
        at--;
      }
      if (!taken[at]) {
        taken[at] = true;
        out[n++] = id;
      }
    }
    return Arrays.copyOf(out, n);
  }

  /** Rows of batch {@code b} in one push (both tables). */
  int rows(int b) {
    return 2 * batches.get(b).length;
  }

  static OptimizerConfig sgd() {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.SGD)
        .setLearningRate(LR)
        .build();
  }

  static InitParametersRequest init() {
    return InitParametersRequest.newBuilder()
        .setTrainerId("bench")
        .setInitId("ctr")
        .addParameters(table(WIDE, 1, 0f))
        .addParameters(table(EMB, EMB_WIDTH, 0.01f))
        .build();
  }

  private static ParameterSpec table(String name, int width, float stddev) {
    return ParameterSpec.newBuilder()
        .setName(name)
        .addShape(0)
        .addShape(width)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(stddev)
        .setOptimizer(sgd())
        .build();
  }

  static FinishInitRequest finish() {
    return FinishInitRequest.newBuilder()
        .setTrainerId("bench")
        .setInitId("ctr")
        .setExpectedBlocks(0)
        .build();
  }

  /** The gradient of row {@code k} of a table of width {@code width}: small, fixed values. */
  static float[] gradient(long[] ids, int width, int seed) {
    float[] g = new float[ids.length * width];
    SplittableRandom r = new SplittableRandom(seed);
    for (int i = 0; i < g.length; i++) {
      g[i] = (float) ((r.nextDouble() - 0.5) * 1e-3);
    }
    return g;
  }

  /** Push {@code step} of session {@code session}: batch {@code b}'s rows, answered with rows. */
  PushGradientsRequest push(String session, long step, int b) {
    long[] ids = batches.get(b);
    return PushGradientsRequest.newBuilder()
        .setTrainerId("bench")
        .setSession(session)
        .setStep(step)
        .setAcknowledgedThrough(step - 1)
        .setReturnRows(true)
        .addSparseGradients(rows(WIDE, ids, gradient(ids, 1, b)))
        .addSparseGradients(rows(EMB, ids, gradient(ids, EMB_WIDTH, b + 1)))
        .build();
  }

  private static SparseRows rows(String table, long[] ids, float[] g) {
    SparseRows.Builder b =
        SparseRows.newBuilder()
            .setName(table)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(g));
    for (long id : ids) {
      b.addRowIds(id);
    }
    return b.build();
  }
}
