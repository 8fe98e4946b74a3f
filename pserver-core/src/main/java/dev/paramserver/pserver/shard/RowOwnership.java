package dev.paramserver.pserver.shard;

import dev.paramserver.proto.v1.ErrorReason;
import dev.paramserver.rpc.ServiceException;
import dev.paramserver.tensor.ShardPlacement;
import java.util.Map;

/**
 * The sparse rows this pserver owns: those {@link ShardPlacement#ownerOfRow} routes to the index it
 * serves among the job's {@code pservers} ({@code ps_desired}), the rule trainers route by
 * (docs/reference/routing.md). A trainer's push or pull naming a row of another pserver is refused
 * with WRONG_SHARD before anything is read, applied or created; records the shard replays (its
 * write-ahead log, its primary's records on a backup), checkpoints and warm-start rows are not
 * checked.
 *
 * <p>{@link #UNCHECKED} while either number is unknown: a shard that serves no index (yet), or one
 * whose pserver did not register through etcd (tests that build a bare shard).
 */
public final class RowOwnership {
  /** Every row is accepted. */
  public static final RowOwnership UNCHECKED = new RowOwnership(-1, 0);

  private final int index;
  private final int pservers;

  private RowOwnership(int index, int pservers) {
    this.index = index;
    this.pservers = pservers;
  }

  /**
   * The rows of {@code index} among {@code pservers}; {@link #UNCHECKED} when the index is negative
   * (none served) or {@code pservers} is not positive (unknown).
   */
  public static RowOwnership of(int index, int pservers) {
    return index < 0 || pservers <= 0 ? UNCHECKED : new RowOwnership(index, pservers);
  }

  public boolean checked() {
    return pservers > 0;
  }

  /** The index whose rows are accepted, or -1 when unchecked. */
  public int index() {
    return index;
  }

  /** The number of pservers rows are routed among, or 0 when unchecked. */
  public int pservers() {
    return pservers;
  }

  /**
   * Fails with WRONG_SHARD unless this pserver owns row {@code id} of {@code table}: a multiply,
   * two xors and a modulo, the table's CRC-32 computed once per table ({@link
   * SparseTable#routingHash}).
   */
  void check(SparseTable table, long id) {
    if (pservers > 0) {
      int owner = ShardPlacement.ownerOfRow(table.routingHash, id, pservers);
      if (owner != index) {
        throw wrongShard(table.name(), id, owner);
      }
    }
  }

  private ServiceException wrongShard(String table, long row, int owner) {
    return new ServiceException(
        ErrorReason.WRONG_SHARD,
        "sparse table '"
            + table
            + "' row "
            + row
            + " belongs to pserver "
            + owner
            + " of "
            + pservers
            + ", not to this pserver ("
            + index
            + "): route rows with row_owner(table, row, N) (docs/reference/routing.md)",
        Map.of(
            "owner", Integer.toString(owner),
            "row", Long.toString(row),
            "table", table,
            "pservers", Integer.toString(pservers),
            "index", Integer.toString(index)));
  }

  @Override
  public String toString() {
    return checked() ? "rows of pserver " + index + " of " + pservers : "rows unchecked";
  }
}
