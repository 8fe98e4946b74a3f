package dev.paramserver.pserver.shard;

import com.google.protobuf.ByteString;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.proto.v1.WalRecord;
import dev.paramserver.tensor.SlotMap;
import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The shard's side of elastic placement (docs/explanation/elastic.md), for the pserver's placement
 * follower and slot-move service, its only callers: which slots and blocks the shard serves, the
 * copy and records of a move, and dropping what moved away.
 */
public final class ShardMoves {
  /**
   * The longest a trainer's request for a slot moving here waits for the move's commit: the old
   * owner answers MoveOut only once this pserver holds the slots, and the coordinator commits right
   * after, so the wait is normally a few milliseconds.
   */
  static final long PLACEMENT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(5);

  private final ParameterShard shard;

  public ShardMoves(ParameterShard shard) {
    this.shard = shard;
  }

  /**
   * Times the waits of trainers' requests for slots moving here on {@code clock} from now on (the
   * process's clock until then): the placement follower's, so that a simulation's waits park.
   */
  public void waitWith(ShardClock clock) {
    shard.gate().waitWith(clock);
  }

  /**
   * Serves the rows and blocks {@code map} gives the shard's index, with a move out of ({@code
   * outgoing}: its slots are refused with MOVED) or into ({@code incoming}: requests for its slots
   * wait for the commit) this pserver in progress; null for none.
   */
  public void setPlacement(SlotMap map, MovingSlots outgoing, MovingSlots incoming) {
    shard.gate().setPlacement(map, outgoing, incoming);
  }

  /**
   * The committed placement the shard serves (null: the initial map of pservers). The shard holds
   * it, with the move in progress; the placement follower is its only writer.
   */
  public SlotMap placement() {
    return shard.gate().placement();
  }

  /** The move out of this pserver in progress (its slots are refused with MOVED), or null. */
  public MovingSlots outgoing() {
    return shard.gate().outgoing();
  }

  /** The move into this pserver in progress (requests for its slots wait), or null. */
  public MovingSlots incoming() {
    return shard.gate().incoming();
  }

  /** What trainers' requests are checked against. */
  public RowOwnership rowOwnership() {
    return shard.gate().rowOwnership();
  }

  /**
   * True while a slot move into this pserver is in progress: a trainer's request for its slots
   * waits for the commit (up to {@link #PLACEMENT_WAIT_NANOS}), so it must not run on a transport
   * thread.
   */
  public boolean awaitsMove() {
    return shard.gate().rowOwnership().awaitsMove();
  }

  /**
   * Hands every record applied from now on to {@code tap}, one slot move attempt's (it replaces any
   * other: the attempt before it was cancelled first).
   */
  public void attachTap(RecordTap tap) {
    shard.pushes.attachTap(tap);
  }

  /**
   * Detaches {@code tap} if it is still attached: an attempt that ends detaches its own tap, never
   * a later attempt's.
   */
  public void detachTap(RecordTap tap) {
    shard.pushes.detachTap(tap);
  }

  /**
   * Writes a copy of the moving slots' rows and blocks, with the shard's description, under the
   * write lock, running {@code atCut} before releasing it (see {@link SlotTransfer#writeCopy}).
   */
  public MoveCounts writeCopy(MovingSlots m, OutputStream out, Runnable atCut) throws IOException {
    return SlotTransfer.writeCopy(shard, m, out, atCut);
  }

  /** Installs a move's copy on the new owner (see {@link SlotTransfer#install}). */
  public MoveCounts install(ShardCheckpoint copy, MovingSlots m) {
    return SlotTransfer.install(shard, copy, m);
  }

  /**
   * Makes what move {@code m} brought durable through the write-ahead log: appends one record
   * holding its copy ({@code copy}, the ShardCheckpoint bytes installed) and the pushes of the
   * records forwarded after it, in the order they were applied; a restart replays it (see {@link
   * ParameterShard#replay}). Returns once the record is as durable as the log's sync setting
   * promises.
   *
   * @return false when the shard has no log (nothing written: a checkpoint must do)
   */
  public boolean logMovedIn(MovingSlots m, ByteString copy, List<WalRecord> forwarded) {
    WalRecord.Builder b =
        WalRecord.newBuilder().setMovedIn(copy).setMovedInMove(m.move().toByteString());
    for (WalRecord r : forwarded) {
      b.addAllPushes(r.getPushesList());
      b.setInitId(r.getInitId());
    }
    return shard.pushes.logMovedIn(b.build());
  }

  /** Whether the shard holds an initialisation (else a move's copy brings one). */
  public boolean initialised() {
    return shard.initialised();
  }

  /** Whether the shard has a write-ahead log. */
  public boolean logged() {
    return shard.pushes.pushLog().enabled();
  }

  /** Drops the rows and blocks of a move (moved away, or a move here rolled back). */
  public MoveCounts drop(MovingSlots m) {
    return SlotTransfer.drop(shard, m);
  }

  /** Drops the rows and blocks {@code map} gives another index than {@code index}. */
  public MoveCounts dropUnowned(SlotMap map, int index) {
    return SlotTransfer.dropUnowned(shard, map, index);
  }

  /** The part of {@code record} a move forwards, or null (see {@link SlotTransfer#filter}). */
  public static WalRecord forwarded(WalRecord record, MovingSlots m, int fromIndex) {
    return SlotTransfer.filter(record, m, fromIndex);
  }

  /** Applies a record a move's old owner forwarded (see {@link PushPath#replayForwarded}). */
  public boolean applyForwarded(WalRecord record) {
    return shard.pushes.replayForwarded(record);
  }

  /** Returns once every push that passed its checks before this call was applied. */
  public void awaitApplies() {
    shard.structure().writeLock().lock();
    shard.structure().writeLock().unlock();
  }

  /**
   * Runs a trainer's call; when it names a slot or block moving here whose move is not committed
   * yet, waits (at most {@link #PLACEMENT_WAIT_NANOS}) for the placement to change and runs it
   * again, else answers MOVED naming the committed owner.
   */
  static <T> T placed(CallGate gate, Supplier<T> call) {
    long deadline = gate.clock().nanoTime() + PLACEMENT_WAIT_NANOS;
    while (true) {
      RowOwnership seen = gate.rowOwnership();
      try {
        return call.get();
      } catch (PlacementPendingException e) {
        try {
          if (!gate.awaitPlacementChange(seen, deadline)) {
            throw e.fallback();
          }
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          throw e.fallback();
        }
      }
    }
  }

  /** The move in progress for the status: "out id -> to @epoch", "in id <- from @epoch" or "". */
  static String describe(CallGate gate) {
    MovingSlots out = gate.outgoing();
    MovingSlots in = gate.incoming();
    if (out != null) {
      return "out " + out.id() + " -> " + out.to() + " @" + out.epoch();
    }
    return in == null ? "" : "in " + in.id() + " <- " + in.from() + " @" + in.epoch();
  }
}
