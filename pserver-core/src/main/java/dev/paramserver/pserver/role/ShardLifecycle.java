package dev.paramserver.pserver.role;

import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.pserver.shard.IndexHolder;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.Replica;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of the shard's {@link ShardRole}: the only caller of the shard's role-changing
 * operations (which index it carries, whether its calls are held, the backup its records go to,
 * draining), and the one holder of the index this pserver claimed or serves and of the shard it is
 * the backup of: registration and placement ask it. Registration, replication and checkpointing ask
 * it for moves; a move the state machine does not allow throws {@link IllegalRoleMoveException} and
 * changes nothing.
 *
 * <p>Every move is short and touches memory only (no etcd, no disk), so it may run under the
 * callers' locks and never waits behind a checkpoint.
 */
public final class ShardLifecycle implements IndexHolder {
  private static final Logger log = LoggerFactory.getLogger(ShardLifecycle.class);

  private final ParameterShard shard;
  // Guarded by this.
  private ShardRole role = ShardRole.UNCLAIMED;
  // The index claimed, served or being taken over (-1: none).
  private int index = -1;
  // The index whose state the shard holds and carries (-1: none; loading, a backup, deposed): the
  // shard reads it on its calls' path (IndexHolder), without this monitor.
  private volatile int carried = -1;
  // The shard this pserver is the backup of, or takes over (-1: none).
  private int backupOf = -1;
  // The shard last claimed or backed up, kept when the role ends (-1: none yet).
  private int lastShard = -1;
  // Counts the times the shard stopped serving (a lost lease, a new claim, a backup role): work
  // begun under one term (a slot move taken in) must not be answered under another.
  private long term;

  /** Starts UNCLAIMED: calls are held until an index is claimed and its state loaded. */
  public ShardLifecycle(ParameterShard shard) {
    this.shard = shard;
    shard.holdCalls(
        "pserver is starting (claiming its index, loading its checkpoint): retry shortly");
    shard.indexFrom(this);
  }

  /** The index the shard carries (its state is that index's), or -1. */
  @Override
  public int carriedIndex() {
    return carried;
  }

  private void carry(int carriedIndex) {
    carried = carriedIndex;
    shard.indexFrom(this);
  }

  public synchronized ShardRole role() {
    return role;
  }

  /** The index claimed or served, or -1. */
  public synchronized int index() {
    return index;
  }

  /**
   * The index whose state this pserver holds: the claimed index once it serves it (or, deposed, the
   * one it served last); -1 while none is claimed or the claimed one is still loading.
   */
  public synchronized int loadedIndex() {
    return role == ShardRole.LOADING ? -1 : index;
  }

  /** The shard this pserver is the backup of (or is taking over), or -1. */
  public synchronized int backupOf() {
    return backupOf;
  }

  /**
   * The shard this pserver last claimed or was the backup of, kept after that role ended (a lost
   * lease, a takeover that failed), or -1 before any: a new registration tries it first.
   */
  public synchronized int lastShard() {
    return lastShard;
  }

  /**
   * The job's number of pservers ({@code ps_desired}) as the registration read or wrote it: a
   * trainer's push or pull of sparse rows the served index does not own under it is refused
   * (WRONG_SHARD). Without it (a pserver not registered through etcd) rows are not checked.
   */
  public synchronized void routeRowsAmong(int pservers) {
    shard.setPservers(pservers);
  }

  private void move(ShardRole next, String why) {
    if (!role.canMoveTo(next)) {
      throw new IllegalRoleMoveException(role, next, why);
    }
    log.debug("shard role {} -> {}: {}", role, next, why);
    if (!next.serves()) {
      term++;
    }
    role = next;
  }

  /**
   * The current serving term: it changes each time the shard stops serving (its lease lost, an
   * index claimed and its state loaded again, a backup role), never while it serves.
   */
  public synchronized long term() {
    return term;
  }

  /** Whether the shard serves (SERVING or PRIMARY) and has not stopped since {@code term}. */
  public synchronized boolean servesIn(long term) {
    return role.serves() && this.term == term;
  }

  private void require(boolean ok, ShardRole next, String why) {
    if (!ok) {
      throw new IllegalRoleMoveException(role, next, why);
    }
  }

  /**
   * The registration claimed {@code claimed}. Serving that index already: nothing changes. Else the
   * shard moves to LOADING with its calls held and no index (no checkpoint of the old state is
   * written under either index while the state changes).
   *
   * @return true when the caller must load the index's state (its checkpoint and log)
   */
  public synchronized boolean claimed(int claimed) {
    if (role.serves() && claimed == index) {
      return false;
    }
    move(ShardRole.LOADING, "claimed index " + claimed);
    boolean load = claimed != index || carried != claimed;
    if (load) {
      shard.holdCalls("pserver " + claimed + " is loading its checkpoint: retry shortly");
      carry(-1);
    }
    index = claimed;
    backupOf = -1;
    lastShard = claimed;
    return load;
  }

  /** A claim's load or registration failed: the index is given back (UNCLAIMED). */
  public synchronized void claimFailed(String why) {
    if (role == ShardRole.LOADING) {
      unclaimed("claim failed: " + why);
    }
  }

  /** The claimed index's state is loaded: serve it alone (LOADING -> SERVING). */
  public synchronized void serve() {
    if (role == ShardRole.SERVING) {
      return;
    }
    move(ShardRole.SERVING, "state of index " + index + " loaded");
    carry(index);
    shard.releaseCalls();
  }

  /**
   * Serve the claimed (or taken over) index as its primary, handing every logged record to {@code
   * replica} (LOADING, SERVING or TAKING_OVER -> PRIMARY).
   */
  public synchronized void servePrimary(Replica replica) {
    move(ShardRole.PRIMARY, "primary of shard " + index);
    carry(index);
    backupOf = -1;
    shard.attachReplica(replica);
    shard.releaseCalls();
  }

  /**
   * The replication role ended (lease lost, re-registration, shutdown): a primary stops answering
   * (DEPOSED: it no longer knows that a backup which may take over holds what it would acknowledge,
   * so it must not answer on its log alone), a backup or a takeover in progress holds nothing
   * (UNCLAIMED); a deposed primary stays deposed.
   */
  public synchronized void replicationStopped() {
    switch (role) {
      case PRIMARY ->
          depose(
              "pserver "
                  + index
                  + " stopped replicating its shard (registering again): find the shard's primary"
                  + " in etcd and retry");
      case BACKUP_FILLING, BACKUP_SYNCED, TAKING_OVER -> unclaimed("replication stopped");
      default -> {}
    }
    shard.attachReplica(null);
  }

  /**
   * The registration's lease is lost (the keep-alive failed for a TTL, etcd said it expired, or the
   * process resumed after a pause longer than the TTL): a shard that serves (PRIMARY or SERVING)
   * stops answering at once (DEPOSED), before the registration claims anything again, since another
   * pserver may own its index by now. Calls are refused with {@code why} (UNAVAILABLE); the shard
   * no longer carries the index, so no checkpoint of this state is written under it and a new claim
   * of the same index loads it again.
   *
   * @return false when the shard did not serve (nothing changes)
   */
  public synchronized boolean leaseLost(String why) {
    if (!role.serves()) {
      return false;
    }
    depose(why);
    return true;
  }

  private void unclaimed(String why) {
    move(ShardRole.UNCLAIMED, why);
    shard.holdCalls("pserver holds no shard (" + why + "): registering again, retry shortly");
    shard.attachReplica(null);
    carry(-1);
    index = -1;
    backupOf = -1;
  }

  /**
   * Becomes the backup of shard {@code shardIndex}: calls are held, the shard has no index and
   * drops its content (the primary's copy replaces it).
   */
  public synchronized void backup(int shardIndex) {
    move(ShardRole.BACKUP_FILLING, "backup of shard " + shardIndex);
    shard.holdCalls(
        "this pserver is the backup of shard "
            + shardIndex
            + ": call the primary (ps/"
            + shardIndex
            + ")");
    carry(-1);
    shard.attachReplica(null);
    index = -1;
    backupOf = shardIndex;
    lastShard = shardIndex;
    shard.reset();
  }

  /**
   * The backup of {@code shardIndex} holds (or no longer holds) every acknowledged update; ignored
   * unless this pserver is currently that shard's backup (a takeover in progress keeps its state).
   */
  public synchronized void backupSynced(int shardIndex, boolean synced) {
    if (!role.isBackup() || backupOf != shardIndex) {
      return;
    }
    ShardRole next = synced ? ShardRole.BACKUP_SYNCED : ShardRole.BACKUP_FILLING;
    if (next != role) {
      move(next, synced ? "copy installed" : "needs a new copy");
    }
  }

  /**
   * The primary of {@code shardIndex} ended: this backup starts claiming its index.
   *
   * @return false when this pserver is no longer that shard's backup (nothing changes)
   */
  public synchronized boolean beginTakeover(int shardIndex) {
    if (!role.isBackup() || backupOf != shardIndex) {
      return false;
    }
    move(ShardRole.TAKING_OVER, "primary of shard " + shardIndex + " ended");
    return true;
  }

  /**
   * Another pserver claimed the index first: follow it again as its backup.
   *
   * @param synced whether the backup still holds every update of the primary it follows
   */
  public synchronized void takeoverAborted(boolean synced) {
    if (role != ShardRole.TAKING_OVER) {
      return;
    }
    move(synced ? ShardRole.BACKUP_SYNCED : ShardRole.BACKUP_FILLING, "claim lost");
  }

  /**
   * The takeover's claim succeeded and the shard holds the index's state: it carries the index from
   * now on (so that it can be checkpointed), its calls still held.
   *
   * @throws IllegalRoleMoveException when the takeover was ended meanwhile (shutdown)
   */
  public synchronized void takeoverInstalled() {
    require(role == ShardRole.TAKING_OVER, ShardRole.PRIMARY, "no takeover in progress");
    index = backupOf;
    carry(index);
  }

  /**
   * A takeover failed after its claim: the shard gives the index back and holds nothing
   * (UNCLAIMED). Ignored in any other state (the takeover was ended meanwhile, and the shard may
   * already be loading another claim, which this must not undo).
   */
  public synchronized void release(String why) {
    if (role == ShardRole.TAKING_OVER) {
      unclaimed(why);
    }
  }

  /**
   * A backup reported another primary, or this primary could not confirm its ownership: calls are
   * refused with {@code why} (UNAVAILABLE, so that trainers look the shard up again) until the
   * registration gives this pserver a new role. The shard no longer carries the index (no
   * checkpoint of this state is written under it; a new claim of it loads it again).
   *
   * @return false when this pserver was not a primary (nothing changes)
   */
  public synchronized boolean deposed(String why) {
    if (role != ShardRole.PRIMARY) {
      return false;
    }
    depose(why);
    return true;
  }

  private void depose(String why) {
    move(ShardRole.DEPOSED, why);
    // Calls are refused before anything else changes: a push that passed the gate meanwhile is
    // refused by the backup's settle (see PushPath.pushOutcome).
    shard.holdCalls(why);
    carry(-1);
  }

  /**
   * Shutdown: pushes and pulls fail with SHUTTING_DOWN from now on; returns once the pushes in
   * flight finished. Idempotent.
   */
  public void drain() {
    synchronized (this) {
      if (role != ShardRole.DRAINING && role != ShardRole.STOPPED) {
        move(ShardRole.DRAINING, "shutdown");
      }
    }
    // Outside the monitor: waits for pushes in flight.
    shard.beginDraining();
  }

  /** Shutdown is complete. */
  public synchronized void stopped() {
    if (role != ShardRole.STOPPED) {
      if (role != ShardRole.DRAINING) {
        move(ShardRole.DRAINING, "shutdown");
      }
      move(ShardRole.STOPPED, "shutdown complete");
      shard.attachReplica(null);
    }
  }

  /** The shard's status with this pserver's part in the replication. */
  public ShardStatus status() {
    ShardStatus store = shard.status();
    ShardRole r;
    int of;
    synchronized (this) {
      r = role;
      of = backupOf;
    }
    ShardStatus.Builder s = store.toBuilder();
    switch (r) {
      case PRIMARY -> s.setReplicaRole(ReplicaRole.REPLICA_PRIMARY);
      case BACKUP_SYNCED -> s.setReplicaRole(ReplicaRole.REPLICA_BACKUP_SYNCED);
      case BACKUP_FILLING, TAKING_OVER -> s.setReplicaRole(ReplicaRole.REPLICA_BACKUP_FILLING);
      default -> {}
    }
    if (of >= 0) {
      s.setBackupOf(of);
    }
    return s.build();
  }
}
