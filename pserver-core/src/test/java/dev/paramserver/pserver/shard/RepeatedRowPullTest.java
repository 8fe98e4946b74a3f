package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.tensor.TensorCodec;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** A pull reads each distinct row once, yet answers every id of the request, in its order. */
class RepeatedRowPullTest {
  private static final int WIDTH = 3;

  private static ParameterShard shard() {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init(
            "s",
            List.of(
                ParameterSpec.newBuilder()
                    .setName("emb")
                    .addShape(0)
                    .addShape(WIDTH)
                    .setDtype(DataType.FLOAT32)
                    .setSparse(true)
                    .setInitStddev(0.5f)
                    .setOptimizer(sgd(1))
                    .build()),
            List.of()));
    shard.finishInit(finish("s", 0));
    return shard;
  }

  private static SparseRows pull(ParameterShard shard, long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName("emb");
    Arrays.stream(ids).forEach(ref::addRowIds);
    return shard
        .pull(PullParametersRequest.newBuilder().addSparseRows(ref).build())
        .getSparseRows(0);
  }

  @Test
  void repeatedIds_areAnsweredAtEveryPosition_withTheirRowsValues() {
    ParameterShard shard = shard();
    // rows 5 and 9 exist (pushed), 7 and 1 << 40 do not (initial values)
    shard.push(
        PushGradientsRequest.newBuilder()
            .addSparseGradients(
                SparseRows.newBuilder()
                    .setName("emb")
                    .setDtype(DataType.FLOAT32)
                    .addRowIds(5)
                    .addRowIds(9)
                    .setData(TensorCodec.encode(new float[] {1, 2, 3, 4, 5, 6})))
            .build());
    long[] ids = {5, 7, 5, 9, 1L << 40, 7, 5, 9, 1L << 40};

    SparseRows rows = pull(shard, ids);

    assertThat(rows.getRowIdsList())
        .containsExactly(Arrays.stream(ids).boxed().toArray(Long[]::new));
    float[] got = TensorCodec.decode(rows.getData());
    assertThat(got).hasSize(ids.length * WIDTH);
    for (int i = 0; i < ids.length; i++) {
      float[] alone = TensorCodec.decode(pull(shard, ids[i]).getData());
      assertThat(Arrays.copyOfRange(got, i * WIDTH, (i + 1) * WIDTH))
          .as("row %d at position %d", ids[i], i)
          .containsExactly(alone);
    }
  }

  @Test
  void firstOccurrences_pointEveryIdAtItsFirstPosition() {
    SplittableRandom random = new SplittableRandom(3);
    for (int n : new int[] {0, 1, 2, 3, 17, 1024, 5000}) {
      long[] ids = new long[n];
      for (int i = 0; i < n; i++) {
        // few distinct ids, some colliding in the low bits
        ids[i] = random.nextInt(Math.max(1, n / 3)) * (1L << 32) - random.nextInt(2);
      }
      int[] first = FirstOccurrences.of(ids);
      for (int i = 0; i < n; i++) {
        int expected = 0;
        while (ids[expected] != ids[i]) {
          expected++;
        }
        assertThat(first[i]).as("n %d, position %d", n, i).isEqualTo(expected);
      }
    }
  }
}
