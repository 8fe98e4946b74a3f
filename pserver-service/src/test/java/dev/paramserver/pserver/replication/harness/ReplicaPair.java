package dev.paramserver.pserver.replication.harness;

import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.pserver.persistence.CheckpointService;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.testsupport.Poll;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A primary and its backup in one JVM, joined by a {@link FaultyNetwork}, and what a run of a
 * {@link Schedule} checks: once the primary is quiescent and the backup synced, the backup holds
 * the primary's shard bit for bit, and so does the primary's checkpoint plus its write-ahead log.
 */
final class ReplicaPair implements AutoCloseable {
  /** Long enough that no schedule's hold or delay makes the primary give up on its backup. */
  static final Duration REPLICATION_TIMEOUT = Duration.ofSeconds(5);

  final InMemoryCoordinator coordinator = new InMemoryCoordinator();

  /** The primary's calls to its backup. */
  final FaultyNetwork network;

  /** The backup's calls to a backup of its own, once it took over: the same plan, run again. */
  final FaultyNetwork backupNetwork;

  final InProcessPserver primary;
  final InProcessPserver backup;
  private final List<AutoCloseable> others = new ArrayList<>();

  ReplicaPair(Schedule schedule) {
    this.network = schedule.network();
    this.backupNetwork = schedule.network();
    this.primary = new InProcessPserver("ps-a", coordinator, network, REPLICATION_TIMEOUT);
    this.backup = new InProcessPserver("ps-b", coordinator, backupNetwork, REPLICATION_TIMEOUT);
  }

  /**
   * Registers the primary, initialises the model, runs the schedule's trainers (registering the
   * backup when the schedule says) and heals the network.
   */
  Trainers.Outcome run(Schedule schedule) throws InterruptedException {
    primary.registerAsPrimary();
    AtomicBoolean joined = new AtomicBoolean();
    if (schedule.backupJoinsAfter() < 0) {
      joined.set(true);
      backup.registerAsBackup();
    }
    Trainers.initialise(primary.shard);
    if (schedule.backupJoinsAfter() == 0 && joined.compareAndSet(false, true)) {
      backup.registerAsBackup();
    }
    Trainers.Outcome outcome =
        Trainers.run(
            primary.shard,
            schedule,
            1,
            done -> {
              if (done >= schedule.backupJoinsAfter() && joined.compareAndSet(false, true)) {
                backup.registerAsBackup();
              }
            });
    if (joined.compareAndSet(false, true)) {
      backup.registerAsBackup();
    }
    network.heal();
    return outcome;
  }

  /**
   * Waits until the primary's backup is synced, the backup says so too and has applied as many
   * updates as the primary.
   */
  void awaitSynced(InProcessPserver from, InProcessPserver to) {
    Poll.until(
        Duration.ofSeconds(20),
        Duration.ofMillis(5),
        () ->
            from.replication.backupSynced()
                && to.role() == ReplicaRole.REPLICA_BACKUP_SYNCED
                && to.shard.step() == from.shard.step(),
        to.name + " synced with " + from.name + " at step " + from.shard.step());
  }

  /**
   * The primary's newest checkpoint plus its write-ahead log replayed into a fresh shard, as a
   * restarted primary loads them.
   */
  ShardState recovered(InProcessPserver of) {
    ParameterShard fresh = new ParameterShard(true);
    CheckpointService cs =
        new CheckpointService(
            fresh, coordinator, InProcessPserver.properties(of.dir(), REPLICATION_TIMEOUT));
    try {
      cs.load(InProcessPserver.INDEX);
      return ShardState.of(fresh.snapshot());
    } finally {
      cs.wal().close();
    }
  }

  /** Another pserver on this pair's coordinator (closed with the pair). */
  InProcessPserver another(String name) {
    FaultyNetwork outbound = FaultyNetwork.reliable();
    InProcessPserver p = new InProcessPserver(name, coordinator, outbound, REPLICATION_TIMEOUT);
    others.add(p);
    others.add(outbound);
    return p;
  }

  @Override
  public void close() {
    for (AutoCloseable c : others) {
      try {
        c.close();
      } catch (Exception e) {
        // best effort: the next one must still be closed
      }
    }
    backup.close();
    primary.close();
    network.close();
    backupNetwork.close();
    coordinator.close();
  }
}
