package dev.paramserver.it;

import dev.paramserver.localcluster.LocalCluster;
import dev.paramserver.localcluster.LocalClusterException;
import dev.paramserver.localcluster.Role;
import dev.paramserver.testsupport.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.Random;

/**
 * The faults of {@link FaultSoakTest}: how each kind starts on a shard's primary or backup and how
 * it heals. Every pserver reaches etcd through a proxy of its own ({@code etcd}) and is reached by
 * its primary through another ({@code peers}, the port it advertises); its write-ahead log may lie
 * on a small disk of its own ({@link SoakDisks}).
 */
final class SoakFaults {
  /** The pserver's default {@code replication-timeout}, which the soak keeps. */
  static final Duration REPLICATION_TIMEOUT = Duration.ofSeconds(10);

  /** The kinds of fault; {@code -Dsoak.faults} names them. */
  enum Kind {
    KILL_PRIMARY,
    KILL_BACKUP,
    PAUSE_PRIMARY,
    PAUSE_BACKUP,
    PRIMARY_ETCD_PARTITION,
    BACKUP_ETCD_PARTITION,
    /** Both ways, shorter than the replication timeout; held bytes are delivered on heal. */
    PRIMARY_BACKUP_PARTITION,
    /** Both ways, 2 to 5 s longer than the replication timeout; held bytes are lost on heal. */
    LONG_PRIMARY_BACKUP_PARTITION,
    /** One way: what the primary sends its backup is held, its answers pass; lost on heal. */
    PRIMARY_TO_BACKUP_DROPPED,
    /** The other way: requests reach the backup, its answers are held; lost on heal. */
    BACKUP_TO_PRIMARY_DROPPED,
    /** A second fault (of a short kind) starts before the first (of a short kind) heals. */
    OVERLAPPING,
    /** The primary's log disk is full: its next write fails; the backup takes over. */
    FULL_DISK,
    /** The primary's log disk fails fsync (writes succeed): the backup takes over. */
    FSYNC_ERROR;

    boolean needsDisks() {
      return this == FULL_DISK || this == FSYNC_ERROR;
    }

    /** Kinds an overlapping fault is made of: those that heal on their own schedule. */
    boolean overlappable() {
      return this != OVERLAPPING && !needsDisks() && this != LONG_PRIMARY_BACKUP_PARTITION;
    }
  }

  /** A fault started; {@link #heal} ends it. */
  @FunctionalInterface
  interface Active {
    void heal() throws Exception;
  }

  private final LocalCluster cluster;
  private final List<FaultProxy> etcd;
  private final List<FaultProxy> peers;
  private final SoakDisks disks; // null: disk faults are not drawn
  private final Random random;
  private final List<Kind> deck = new ArrayList<>();

  SoakFaults(
      LocalCluster cluster,
      List<FaultProxy> etcd,
      List<FaultProxy> peers,
      SoakDisks disks,
      Random random) {
    this.cluster = cluster;
    this.etcd = etcd;
    this.peers = peers;
    this.disks = disks;
    this.random = random;
  }

  /**
   * The next kind among {@code kinds}: dealt from a shuffled deck of them, so a run of {@code
   * kinds.size()} faults draws every kind once.
   */
  Kind next(List<Kind> kinds) {
    if (deck.isEmpty()) {
      deck.addAll(kinds);
      Collections.shuffle(deck, random);
    }
    return deck.remove(deck.size() - 1);
  }

  /** How long a fault of {@code kind} lasts. */
  long millis(Kind kind) {
    return kind == Kind.LONG_PRIMARY_BACKUP_PARTITION
        ? REPLICATION_TIMEOUT.toMillis() + 2_000 + random.nextInt(3_000)
        : 1_000 + random.nextInt(8_000);
  }

  /**
   * Injects {@code kind} on {@code shard} (its primary and synced backup given), lets it last
   * {@code millis} and heals it; returns what was done, for the log.
   */
  String inject(Kind kind, int shard, int primary, int backup, long millis) throws Exception {
    if (kind == Kind.OVERLAPPING) {
      return overlapping(shard, primary, backup, millis);
    }
    Active a = start(kind, primary, backup);
    if (kind.needsDisks()) {
      // the log failed: the pserver must give the shard up, and its backup take it over
      int next;
      try {
        // the disk is kept full while waiting: the pserver's own checkpoints delete log segments,
        // and a 1-hour soak saw a primary write on into the space they freed for a whole minute
        next = awaitNewPrimaryOrLogWait(kind, shard, primary);
      } catch (RuntimeException | Error e) {
        a.heal();
        throw e;
      }
      if (next < 0) {
        // a double fault: the backup had fallen out of sync (etcd recorded it so) before the log
        // failed, so the shard waits for this pserver's log, as it must. The operator's repair:
        // free the disk, keep the log, restart the pserver (it replays its log and serves again)
        repairKeepingLog(primary);
        return kind
            + " on pserver "
            + primary
            + " while its backup was out of sync: the shard waited for its log; restarted with it";
      }
      a.heal();
      return kind + " on pserver " + primary + ", taken over by pserver " + next;
    }
    Thread.sleep(millis); // the fault itself
    a.heal();
    return kind + " " + millis + " ms";
  }

  private String overlapping(int shard, int primary, int backup, long millis) throws Exception {
    List<Kind> parts = new ArrayList<>();
    for (Kind k : Kind.values()) {
      if (k.overlappable()) {
        parts.add(k);
      }
    }
    Kind first = parts.get(random.nextInt(parts.size()));
    Kind second = parts.get(random.nextInt(parts.size()));
    // the second on the other shard or on this one (both of a shard's pservers may be hit)
    int other = random.nextBoolean() ? 1 - shard : shard;
    OptionalInt p2 =
        other == shard ? OptionalInt.of(primary) : ShardRoles.primaryOf(cluster, other);
    OptionalInt b2 =
        other == shard ? OptionalInt.of(backup) : ShardRoles.syncedBackupOf(cluster, other);
    if (p2.isEmpty() || b2.isEmpty()) {
      other = shard;
      p2 = OptionalInt.of(primary);
      b2 = OptionalInt.of(backup);
    }
    long secondMillis = millis(second);
    Active a = start(first, primary, backup);
    Thread.sleep(millis / 2); // the first alone
    Active b;
    try {
      b = start(second, p2.getAsInt(), b2.getAsInt());
    } catch (IllegalStateException down) {
      b = () -> {}; // the first fault killed that pserver: nothing left to pause
    } catch (RuntimeException e) {
      a.heal();
      throw e;
    }
    Thread.sleep(millis - millis / 2); // both
    a.heal();
    Thread.sleep(Math.max(0, secondMillis - (millis - millis / 2))); // the second alone
    b.heal();
    return String.format(
        Locale.ROOT,
        "%s %d ms, then after %d ms %s %d ms on shard %d",
        first,
        millis,
        millis / 2,
        second,
        secondMillis,
        other);
  }

  /** Starts {@code kind} on the given pair. */
  Active start(Kind kind, int primary, int backup) throws Exception {
    switch (kind) {
      case KILL_PRIMARY, KILL_BACKUP -> {
        try {
          cluster.kill(Role.PSERVER, kind == Kind.KILL_PRIMARY ? primary : backup);
        } catch (IllegalStateException down) {
          // an overlapping fault killed it already: it is being restarted
        }
        return () -> {}; // restarted by the supervisor
      }
      case PAUSE_PRIMARY, PAUSE_BACKUP -> {
        int p = kind == Kind.PAUSE_PRIMARY ? primary : backup;
        cluster.pauseProcess(Role.PSERVER, p);
        return () -> {
          try {
            cluster.resume(Role.PSERVER, p);
          } catch (IllegalStateException | LocalClusterException killed) {
            // an overlapping kill ended the paused process: it is being restarted
          }
        };
      }
      case PRIMARY_ETCD_PARTITION, BACKUP_ETCD_PARTITION -> {
        FaultProxy proxy = etcd.get(kind == Kind.PRIMARY_ETCD_PARTITION ? primary : backup);
        proxy.blackHole();
        return proxy::heal;
      }
      case PRIMARY_BACKUP_PARTITION -> {
        peers.get(backup).blackHole();
        return peers.get(backup)::heal;
      }
      case LONG_PRIMARY_BACKUP_PARTITION -> {
        peers.get(backup).blackHole();
        return () -> dropHeld(peers.get(backup));
      }
      case PRIMARY_TO_BACKUP_DROPPED -> {
        peers.get(backup).blackHoleTowardsTarget();
        return () -> dropHeld(peers.get(backup));
      }
      case BACKUP_TO_PRIMARY_DROPPED -> {
        peers.get(backup).blackHoleTowardsClient();
        return () -> dropHeld(peers.get(backup));
      }
      case FULL_DISK, FSYNC_ERROR -> {
        if (disks == null) {
          throw new IllegalStateException(kind + " drawn without the soak's disks");
        }
        if (kind == Kind.FULL_DISK) {
          disks.fill(primary);
        } else {
          disks.failFsync(primary);
        }
        return () -> replaceDisk(kind, primary);
      }
      default -> throw new IllegalArgumentException(kind + " is not a single fault");
    }
  }

  /**
   * Waits up to a minute until a pserver other than {@code primary} is the primary of {@code shard}
   * (returns its index), or until for 10 s in a row none is and etcd records no backup in sync
   * (returns -1: the shard waits for the failed primary's log). Keeps the disk fault up.
   */
  private int awaitNewPrimaryOrLogWait(Kind kind, int shard, int primary)
      throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    long stuckSince = -1;
    while (System.nanoTime() < deadline) {
      fillAgain(kind, primary);
      OptionalInt now = ShardRoles.primaryOf(cluster, shard);
      if (now.isPresent() && now.getAsInt() != primary) {
        return now.getAsInt();
      }
      boolean waitsForLog = now.isEmpty() && !ShardRoles.recordedInSync(cluster, shard);
      if (!waitsForLog) {
        stuckSince = -1;
      } else if (stuckSince < 0) {
        stuckSince = System.nanoTime();
      } else if (System.nanoTime() - stuckSince >= Duration.ofSeconds(10).toNanos()) {
        return -1;
      }
      Thread.sleep(200);
    }
    throw new AssertionError(
        "no pserver but process "
            + primary
            + " became the primary of shard "
            + shard
            + " within 60 s of its disk fault: "
            + ShardRoles.describe(cluster, shard));
  }

  /** Stops pserver {@code i}, frees its disk keeping its log, and starts it again. */
  private void repairKeepingLog(int i) throws Exception {
    try {
      cluster.kill(Role.PSERVER, i, false);
    } catch (IllegalStateException notRunning) {
      // it exited by itself (or is being restarted): restart below brings it back
    }
    disks.repair(i);
    cluster.restart(Role.PSERVER, i);
  }

  /** Takes again the space freed on pserver {@code i}'s disk since the fault began. */
  private void fillAgain(Kind kind, int i) {
    try {
      if (kind == Kind.FULL_DISK) {
        disks.fill(i);
      } else {
        disks.failFsync(i);
      }
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Heals a partition by losing what it held: the connections are cut first. */
  private static void dropHeld(FaultProxy proxy) {
    proxy.cut(Duration.ZERO);
    proxy.heal();
  }

  /**
   * Ends a disk fault: the pserver is stopped, its disk emptied (a full disk) or replaced (after a
   * failed fsync its written pages may be gone), and it is started again, to rejoin as a backup.
   */
  private void replaceDisk(Kind kind, int pserver) throws Exception {
    try {
      cluster.kill(Role.PSERVER, pserver, false);
    } catch (IllegalStateException notRunning) {
      // it exited by itself (or is being restarted): restart below brings it back
    }
    if (kind == Kind.FULL_DISK) {
      disks.empty(pserver);
    } else {
      disks.replace(pserver);
    }
    cluster.restart(Role.PSERVER, pserver);
  }
}
