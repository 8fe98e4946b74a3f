package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.tensor.ShardPlacement;
import dev.paramserver.tensor.SlotMap;
import java.util.List;
import java.util.Map;

/**
 * The sparse rows and dense blocks this pserver serves: those the committed placement ({@link
 * SlotMap}, docs/explanation/elastic.md) gives the index it serves. Without a committed map that is
 * the initial map of the job's {@code pservers} ({@code ps_desired}), which routes rows as {@link
 * ShardPlacement#ownerOfRow} does (docs/reference/routing.md). A trainer's push or pull naming a
 * row of another pserver is refused before anything is read, applied or created: WRONG_SHARD under
 * the initial map (epoch 0), MOVED (naming the owner and the epoch) once a map was committed;
 * records the shard replays (its write-ahead log, its primary's, a move's), checkpoints and
 * warm-start rows are not checked.
 *
 * <p>During a move it also holds the move's slots: on the old owner ({@code outgoing}, frozen) they
 * are refused with MOVED naming the new owner and the move's epoch; on the new owner ({@code
 * incoming}) a request for them waits for the commit ({@link PlacementPendingException}).
 *
 * <p>{@link #UNCHECKED} while the index or the map is unknown: a shard that serves no index (yet),
 * or one whose pserver did not register through etcd (tests that build a bare shard).
 */
public final class RowOwnership {
  /** Every row is accepted. */
  public static final RowOwnership UNCHECKED = new RowOwnership(-1, null, null, null);

  private final int index;
  private final SlotMap map;
  private final MovingSlots outgoing;
  private final MovingSlots incoming;

  private RowOwnership(int index, SlotMap map, MovingSlots outgoing, MovingSlots incoming) {
    this.index = index;
    this.map = map;
    this.outgoing = outgoing;
    this.incoming = incoming;
  }

  /**
   * The rows of {@code index} among {@code pservers} under the initial map; {@link #UNCHECKED} when
   * the index is negative (none served) or {@code pservers} is not positive (unknown).
   */
  public static RowOwnership of(int index, int pservers) {
    return index < 0 || pservers <= 0
        ? UNCHECKED
        : new RowOwnership(index, SlotMap.initial(List.of(), pservers), null, null);
  }

  /**
   * The rows and blocks {@code map} gives {@code index}, with a move out of ({@code outgoing}) or
   * into ({@code incoming}) this pserver in progress (null: none).
   */
  static RowOwnership of(int index, SlotMap map, MovingSlots outgoing, MovingSlots incoming) {
    return index < 0 || map == null ? UNCHECKED : new RowOwnership(index, map, outgoing, incoming);
  }

  public boolean checked() {
    return map != null;
  }

  /** The index whose rows are accepted, or -1 when unchecked. */
  public int index() {
    return index;
  }

  /** The number of pservers rows are routed among, or 0 when unchecked. */
  public int pservers() {
    return map == null ? 0 : map.pservers();
  }

  /** True while a move into this pserver is in progress: a request for its slots waits. */
  boolean awaitsMove() {
    return incoming != null;
  }

  /** The committed placement epoch checked against (0 also when unchecked). */
  public long epoch() {
    return map == null ? 0 : map.epoch();
  }

  /**
   * Fails unless this pserver serves row {@code id} of {@code table}: MOVED or WRONG_SHARD (see the
   * class comment); a slot moving here that is not committed yet throws {@link
   * PlacementPendingException}. A multiply, two xors and a modulo (the table's CRC-32 is computed
   * once per table, {@link SparseTable#routingHash}).
   */
  void check(SparseTable table, long id) {
    if (map == null) {
      return;
    }
    int slot = SlotMap.slotOf(table.routingHash, id, map.slots());
    if (outgoing != null && outgoing.hasRow(table.routingHash, id)) {
      throw moved(
          "sparse table '" + table.name() + "' row " + id + " (slot " + slot + ")",
          outgoing.to(),
          outgoing.epoch(),
          "slot",
          Integer.toString(slot));
    }
    int owner = map.ownerOfSlot(slot);
    boolean pending = incoming != null && incoming.hasRow(table.routingHash, id);
    if (owner == index && !pending) {
      return;
    }
    if (owner == index) {
      owner = incoming.from();
    }
    String what = "sparse table '" + table.name() + "' row " + id + " (slot " + slot + ")";
    ServiceException refusal =
        map.epoch() > 0 || pending
            ? moved(what, owner, map.epoch(), "slot", Integer.toString(slot))
            : wrongShard(table.name(), id, owner);
    if (pending) {
      throw new PlacementPendingException(refusal);
    }
    throw refusal;
  }

  /**
   * Fails with MOVED unless this pserver serves dense block {@code block} of {@code name}: checked
   * only once a map placing it was committed (under the initial map a block this pserver does not
   * hold is UNKNOWN_PARAMETER, as before) and while the block is moving.
   */
  void checkBlock(String name, int block) {
    if (map == null) {
      return;
    }
    String what = "parameter '" + name + "' block " + block;
    if (outgoing != null && outgoing.hasBlock(name, block)) {
      throw moved(what, outgoing.to(), outgoing.epoch(), "block", DenseBlock.key(name, block));
    }
    int owner = map.ownerOfBlock(name, block);
    if (incoming != null && incoming.hasBlock(name, block)) {
      throw new PlacementPendingException(
          moved(
              what,
              owner < 0 || owner == index ? incoming.from() : owner,
              map.epoch(),
              "block",
              DenseBlock.key(name, block)));
    }
    if (owner >= 0 && owner != index) {
      throw moved(what, owner, map.epoch(), "block", DenseBlock.key(name, block));
    }
  }

  /** Whether a pull of every block returns block {@code block} of {@code name} (it is served). */
  boolean serves(String name, int block) {
    try {
      checkBlock(name, block);
      return true;
    } catch (ServiceException | PlacementPendingException e) {
      return false;
    }
  }

  private ServiceException moved(String what, int owner, long epoch, String key, String value) {
    return new ServiceException(
        ErrorReason.MOVED,
        what
            + " moved to pserver "
            + owner
            + " at placement epoch "
            + epoch
            + ", not served by this pserver ("
            + index
            + "): resend it to its owner, split by that placement, with origin set"
            + " (docs/explanation/elastic.md)",
        Map.of(
            "owner",
            Integer.toString(owner),
            "epoch",
            Long.toString(epoch),
            "index",
            Integer.toString(index),
            key,
            value));
  }

  private ServiceException wrongShard(String table, long row, int owner) {
    int pservers = map.pservers();
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
    return checked()
        ? "rows of pserver " + index + " under " + map + (outgoing == null ? "" : ", " + outgoing)
        : "rows unchecked";
  }
}
