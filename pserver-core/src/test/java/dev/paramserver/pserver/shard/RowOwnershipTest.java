package dev.paramserver.pserver.shard;

import static dev.paramserver.pserver.shard.Requests.finish;
import static dev.paramserver.pserver.shard.Requests.init;
import static dev.paramserver.pserver.shard.Requests.sgd;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.DataType;
import dev.paramserver.proto.v1.ParameterSpec;
import dev.paramserver.proto.v1.PullParametersRequest;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.SparseRows;
import dev.paramserver.proto.v1.SparseRowsRef;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.TensorCodec;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The shard refuses trainers' pushes and pulls of sparse rows another pserver owns. */
class RowOwnershipTest {
  private static final int WIDTH = 2;
  private static final String TABLE = "emb";

  private static ParameterShard shard(int index, int pservers) {
    ParameterShard shard = new ParameterShard(true);
    shard.init(
        init(
            "s",
            List.of(
                ParameterSpec.newBuilder()
                    .setName(TABLE)
                    .addShape(0)
                    .addShape(WIDTH)
                    .setDtype(DataType.FLOAT32)
                    .setSparse(true)
                    .setInitStddev(0.1f)
                    .setOptimizer(sgd(1))
                    .build()),
            List.of()));
    shard.finishInit(finish("s", 0));
    shard.indexFrom(() -> index);
    shard.setPservers(pservers);
    return shard;
  }

  /** The first id from {@code from} on that {@code owner} owns among {@code pservers}. */
  private static long rowOf(int owner, int pservers, long from) {
    long id = from;
    while (ShardPlacement.ownerOfRow(TABLE, id, pservers) != owner) {
      id++;
    }
    return id;
  }

  private static PushGradientsRequest push(long... ids) {
    SparseRows.Builder rows =
        SparseRows.newBuilder()
            .setName(TABLE)
            .setDtype(DataType.FLOAT32)
            .setData(TensorCodec.encode(filled(ids.length * WIDTH, 1f)));
    Arrays.stream(ids).forEach(rows::addRowIds);
    return PushGradientsRequest.newBuilder().setTrainerId("t").addSparseGradients(rows).build();
  }

  private static PullParametersRequest pull(long... ids) {
    SparseRowsRef.Builder ref = SparseRowsRef.newBuilder().setName(TABLE);
    Arrays.stream(ids).forEach(ref::addRowIds);
    return PullParametersRequest.newBuilder().addSparseRows(ref).build();
  }

  private static float[] filled(int n, float v) {
    float[] out = new float[n];
    Arrays.fill(out, v);
    return out;
  }

  private static float[] values(ParameterShard shard, long id) {
    return TensorCodec.decode(shard.pull(pull(id)).getSparseRows(0).getData());
  }

  private static long rows(ParameterShard shard) {
    return shard.sparseTable(TABLE).orElseThrow().rows();
  }

  @Test
  void pushNamingARowOfAnotherPserver_isRefusedWhole_andAppliesAndCreatesNothing() {
    ParameterShard shard = shard(0, 2);
    long mine = rowOf(0, 2, 1);
    long theirs = rowOf(1, 2, 1);
    float[] before = values(shard, mine);

    ServiceException e =
        catchThrowableOfType(ServiceException.class, () -> shard.push(push(mine, theirs)));

    assertThat(e.reason()).isEqualTo(ErrorReason.WRONG_SHARD);
    assertThat(e.metadata())
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(
                "owner", "1",
                "row", Long.toString(theirs),
                "table", TABLE,
                "pservers", "2",
                "index", "0"));
    assertThat(e.getMessage())
        .isEqualTo(
            "sparse table 'emb' row "
                + theirs
                + " belongs to pserver 1 of 2, not to this pserver (0): route rows with"
                + " row_owner(table, row, N) (docs/reference/routing.md)");
    assertThat(shard.step()).isZero();
    assertThat(rows(shard)).isZero();
    assertThat(values(shard, mine)).containsExactly(before);

    // the rows it owns are pushed as before
    assertThat(shard.push(push(mine))).isEqualTo(1);
    assertThat(rows(shard)).isEqualTo(1);
    assertThat(values(shard, mine)).containsExactly(before[0] - 1f, before[1] - 1f);
  }

  @Test
  void pullNamingARowOfAnotherPserver_isRefused_namingItsOwner() {
    ParameterShard shard = shard(2, 3);
    long theirs = rowOf(0, 3, 1_000);

    ServiceException e =
        catchThrowableOfType(
            ServiceException.class, () -> shard.pull(pull(rowOf(2, 3, 1), theirs)));

    assertThat(e.reason()).isEqualTo(ErrorReason.WRONG_SHARD);
    assertThat(e.metadata())
        .containsEntry("owner", "0")
        .containsEntry("index", "2")
        .containsEntry("pservers", "3")
        .containsEntry("row", Long.toString(theirs));
  }

  @Test
  void everyRow_isAcceptedExactlyWhereTheRoutingRuleSendsIt() {
    int pservers = 3;
    List<ParameterShard> shards =
        List.of(shard(0, pservers), shard(1, pservers), shard(2, pservers));
    // (row ids are non-negative: negative ones are out of range on every pserver)
    long[] ids = {0, 1, 2, 42, 1L << 40, (1L << 53) + 1, Long.MAX_VALUE, Long.MAX_VALUE - 7};
    for (long id : ids) {
      int owner = ShardPlacement.ownerOfRow(TABLE, id, pservers);
      for (int i = 0; i < pservers; i++) {
        boolean accepted = accepts(shards.get(i), id);
        assertThat(accepted)
            .as("row %d on pserver %d (owner %d)", id, i, owner)
            .isEqualTo(i == owner);
      }
    }
  }

  private static boolean accepts(ParameterShard shard, long id) {
    try {
      shard.pull(pull(id));
      return true;
    } catch (ServiceException e) {
      if (e.reason() != ErrorReason.WRONG_SHARD) {
        throw e;
      }
      return false;
    }
  }

  @Test
  void loggedAndReplicatedRecords_areAppliedWithoutTheCheck() {
    ParameterShard shard = shard(0, 2);
    long theirs = rowOf(1, 2, 1);
    WalRecord record = WalRecord.newBuilder().setInitId("s").addPushes(push(theirs)).build();

    assertThat(shard.replay(record)).isTrue();
    assertThat(shard.replayReplicated(record)).isTrue();

    assertThat(shard.step()).isEqualTo(2);
    assertThat(rows(shard)).isEqualTo(1);
  }

  @Test
  void withoutAServedIndexOrAKnownNumberOfPservers_rowsAreNotChecked() {
    assertThat(RowOwnership.of(-1, 2).checked()).isFalse();
    assertThat(RowOwnership.of(0, 0).checked()).isFalse();
    assertThat(RowOwnership.of(1, 2))
        .extracting(RowOwnership::index, RowOwnership::pservers)
        .containsExactly(1, 2);

    ParameterShard bare = shard(0, 0);
    long other = rowOf(1, 2, 1);
    assertThat(bare.push(push(other))).isEqualTo(1);
    bare.setPservers(2);
    assertThat(bare.gate().rowOwnership().checked()).isTrue();
    bare.indexFrom(() -> -1); // deposed, loading: no index, nothing checked (calls are held then)
    assertThat(bare.gate().rowOwnership()).isSameAs(RowOwnership.UNCHECKED);
    bare.indexFrom(() -> 1);
    assertThat(bare.push(push(other))).isEqualTo(2);
  }
}
