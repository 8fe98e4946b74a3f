package dev.paramserver.pserver.grpc;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.BlockRef;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.FinishInitRequest;
import dev.paramserver.proto.v1.InitParametersRequest;
import dev.paramserver.proto.v1.OptimizerConfig;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.TensorBlock;
import dev.paramserver.tensor.TensorCodec;
import java.util.List;
import java.util.Random;

/**
 * Requests of the fuzz test's model, built as the trainer builds them (a dense Adam parameter cut
 * into blocks, a bounded sparse table), and the mutations applied to them. Each mutation says
 * whether the mutated request must be refused: a request it may leave valid (a duplicated row id,
 * NaN initial values) is only checked for a clean answer.
 */
final class HostileRequests {
  static final String INIT_ID = "fuzz-init";
  static final String DENSE = "fc1.w";
  static final String SPARSE = "emb";
  static final int BLOCK = 8;
  static final int DENSE_BLOCKS = 3;
  static final int ROWS = 64;
  static final int WIDTH = 4;

  private HostileRequests() {}

  static OptimizerConfig adam() {
    return OptimizerConfig.newBuilder()
        .setKind(OptimizerConfig.Kind.ADAM)
        .setLearningRate(0.01f)
        .setBeta1(0.9f)
        .setBeta2(0.999f)
        .setEpsilon(1e-8f)
        .build();
  }

  static ParameterSpec denseSpec() {
    return ParameterSpec.newBuilder()
        .setName(DENSE)
        .addShape(DENSE_BLOCKS)
        .addShape(BLOCK)
        .setDtype(DataType.FLOAT32)
        .setBlockSize(BLOCK)
        .setOptimizer(adam())
        .build();
  }

  static ParameterSpec sparseSpec() {
    return ParameterSpec.newBuilder()
        .setName(SPARSE)
        .addShape(ROWS)
        .addShape(WIDTH)
        .setDtype(DataType.FLOAT32)
        .setSparse(true)
        .setInitStddev(0.1f)
        .setOptimizer(adam())
        .build();
  }

  static TensorBlock block(int b, float[] values) {
    return TensorBlock.newBuilder()
        .setName(DENSE)
        .setBlock(b)
        .setOffset((long) b * BLOCK)
        .setDtype(DataType.FLOAT32)
        .setData(TensorCodec.encode(values))
        .build();
  }

  /** The whole init of the model (both parameters, every block, two warm-start rows). */
  static InitParametersRequest init(String initId) {
    Random r = new Random(7);
    InitParametersRequest.Builder init =
        InitParametersRequest.newBuilder()
            .setTrainerId("t0")
            .setInitId(initId)
            .addParameters(denseSpec())
            .addParameters(sparseSpec());
    for (int b = 0; b < DENSE_BLOCKS; b++) {
      init.addBlocks(block(b, gaussian(r, BLOCK)));
    }
    init.addSparseRows(
        SparseRows.newBuilder()
            .setName(SPARSE)
            .addRowIds(3)
            .addRowIds(5)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(gaussian(r, 2 * WIDTH))));
    return init.build();
  }

  static FinishInitRequest finish(String initId, int blocks) {
    return FinishInitRequest.newBuilder()
        .setTrainerId("t0")
        .setInitId(initId)
        .setExpectedBlocks(blocks)
        .build();
  }

  /** A trainer's identified push: some dense blocks and some rows, as RequestPlanner cuts them. */
  static PushGradientsRequest push(long seed, long step) {
    Random r = new Random(seed);
    PushGradientsRequest.Builder p =
        PushGradientsRequest.newBuilder().setTrainerId("t1").setSession("s1").setStep(step);
    // this pserver holds blocks 0 and 2 of fc1.w; block 1 is another pserver's
    for (int b : r.nextBoolean() ? new int[] {0, 2} : new int[] {r.nextBoolean() ? 0 : 2}) {
      p.addGradients(
          TensorBlock.newBuilder()
              .setName(DENSE)
              .setBlock(b)
              .setDtype(DataType.FLOAT32)
              .setData(TensorCodec.encode(gaussian(r, BLOCK))));
    }
    p.addSparseGradients(
        SparseRows.newBuilder()
            .setName(SPARSE)
            .addRowIds(r.nextInt(ROWS))
            .addRowIds(r.nextInt(ROWS))
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(gaussian(r, 2 * WIDTH))));
    return p.build();
  }

  static PullParametersRequest pull(long seed) {
    Random r = new Random(seed);
    return PullParametersRequest.newBuilder()
        .setTrainerId("t1")
        .addBlocks(BlockRef.newBuilder().setName(DENSE).setBlock(r.nextBoolean() ? 0 : 2))
        .addSparseRows(
            SparseRowsRef.newBuilder().setName(SPARSE).addRowIds(r.nextInt(ROWS)).addRowIds(1))
        .build();
  }

  static float[] gaussian(Random r, int n) {
    float[] out = new float[n];
    for (int i = 0; i < n; i++) {
      out[i] = (float) r.nextGaussian();
    }
    return out;
  }

  /** {@code data} one element shorter or longer, or a byte that is no whole element. */
  static ByteString lie(ByteString data, int how) {
    return switch (Math.floorMod(how, 4)) {
      case 0 -> data.substring(0, Math.max(0, data.size() - 4));
      case 1 -> data.concat(ByteString.copyFrom(new byte[4]));
      case 2 -> data.concat(ByteString.copyFrom(new byte[1]));
      default -> ByteString.EMPTY;
    };
  }

  /** {@code data} (float32) with one element replaced by NaN, +Inf or -Inf. */
  static ByteString nonFinite(ByteString data, int at, int which) {
    float[] v = TensorCodec.decode(data);
    if (v.length == 0) {
      return TensorCodec.encode(new float[] {Float.NaN});
    }
    float bad =
        switch (Math.floorMod(which, 3)) {
          case 0 -> Float.NaN;
          case 1 -> Float.POSITIVE_INFINITY;
          default -> Float.NEGATIVE_INFINITY;
        };
    v[Math.floorMod(at, v.length)] = bad;
    return TensorCodec.encode(v);
  }

  /** Dtype numbers to flip to: every other known type, and numbers no enum value has. */
  static final List<Integer> OTHER_DTYPES = List.of(0, 2, 3, 4, 5, 6, 7, 99, -1, 1 << 30);

  /** Shapes whose product overflows int or long, or that are empty, negative or over limits. */
  static final List<List<Long>> HOSTILE_SHAPES =
      List.of(
          List.of(),
          List.of(0L),
          List.of(-1L),
          List.of(-24L),
          List.of(Long.MAX_VALUE),
          List.of(1L << 31),
          List.of(1L << 32, 1L << 32),
          List.of(Long.MAX_VALUE, 2L),
          List.of(-1L, -24L),
          List.of(65536L, 65536L),
          List.of(3L, 0L, 8L),
          List.of(1L << 40, 1L << 40, 1L << 40));
}
