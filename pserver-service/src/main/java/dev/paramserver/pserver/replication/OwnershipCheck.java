package dev.paramserver.pserver.replication;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.Lease;
import java.time.Duration;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Confirms with etcd that this primary still owns its shard before a push is answered without its
 * backup: {@code ps/<index>} exists with this primary's epoch (its create revision) under this
 * primary's lease, read linearizably (jetcd's default read) after the push was applied, and the
 * lease is alive by this process's own clock both before and after the read (a process paused past
 * its TTL sees its lease as lost at once, before its keep-alive loop runs again).
 *
 * <p>Concurrent pushes share a read, as concurrent pushes share an fsync: a push is confirmed by
 * the first read sent after it asked, so one read in flight confirms every push that asked before
 * it was sent, and those that asked later wait for the next one.
 */
final class OwnershipCheck {
  private static final Logger log = LoggerFactory.getLogger(OwnershipCheck.class);

  /** What a read found: the shard is this primary's, another's, or etcd did not answer. */
  enum Verdict {
    OWNER,
    NOT_OWNER,
    UNKNOWN
  }

  private final KeyValueStore kv;
  private final String key;
  private final long epoch;
  private final Lease lease;
  private final Duration timeout;
  private final ReplicationClock clock;
  // Guarded by this: the send time of the newest read completed and what it found, whether a read
  // is in flight, and how many reads were sent (for tests and logs).
  private boolean read;
  private long lastSentNanos;
  private Verdict lastVerdict = Verdict.UNKNOWN;
  private String lastWhy = "";
  private boolean reading;
  private long reads;

  /**
   * @param key {@code ps/<index>}
   * @param epoch the create revision of this primary's {@code ps/<index>}
   * @param timeout the longest a push waits for a confirmation (the read itself is bounded by the
   *     coordinator's call timeout too)
   */
  OwnershipCheck(KeyValueStore kv, String key, long epoch, Lease lease, Duration timeout) {
    this(kv, key, epoch, lease, timeout, ReplicationClock.SYSTEM);
  }

  /** As above, on {@code clock}'s time and waits. */
  OwnershipCheck(
      KeyValueStore kv,
      String key,
      long epoch,
      Lease lease,
      Duration timeout,
      ReplicationClock clock) {
    this.clock = clock;
    this.kv = kv;
    this.key = key;
    this.epoch = epoch;
    this.lease = lease;
    this.timeout = timeout;
  }

  /** The lease, by this process's clock (no etcd call). */
  boolean leaseAlive() {
    return lease.isAlive();
  }

  /** Reads sent so far. */
  synchronized long reads() {
    return reads;
  }

  /**
   * Returns when a read sent after this call began confirmed the ownership.
   *
   * @throws ServiceException SHUTTING_DOWN (UNAVAILABLE: the trainer retries, after looking the
   *     primary up again) when the shard is another's, the lease is lost, or etcd did not confirm
   *     within the timeout: the push must not be acknowledged
   */
  void confirm() {
    long asked = clock.nanoTime();
    long deadline = asked + timeout.toNanos();
    if (!lease.isAlive()) {
      throw refused(Verdict.NOT_OWNER, "its lease " + Long.toHexString(lease.id()) + " is lost");
    }
    while (true) {
      long sent;
      synchronized (this) {
        while (true) {
          if (read && lastSentNanos - asked >= 0) {
            if (lastVerdict == Verdict.OWNER) {
              return;
            }
            throw refused(lastVerdict, lastWhy);
          }
          if (!reading) {
            break;
          }
          long left = deadline - clock.nanoTime();
          if (left <= 0) {
            throw refused(Verdict.UNKNOWN, "etcd did not confirm it within " + timeout);
          }
          try {
            clock.timedWait(this, left);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw refused(Verdict.UNKNOWN, "interrupted while confirming it");
          }
        }
        reading = true;
        reads++;
        sent = clock.nanoTime();
      }
      Verdict verdict;
      String why;
      try {
        Optional<KeyValueStore.KeyValue> now = kv.get(key);
        if (now.isEmpty()) {
          verdict = Verdict.NOT_OWNER;
          why = key + " is gone (its lease expired)";
        } else if (now.get().createRevision() != epoch || now.get().leaseId() != lease.id()) {
          verdict = Verdict.NOT_OWNER;
          why = key + " is held by another primary (epoch " + now.get().createRevision() + ")";
        } else if (!lease.isAlive()) {
          verdict = Verdict.NOT_OWNER;
          why = "its lease " + Long.toHexString(lease.id()) + " is lost";
        } else {
          verdict = Verdict.OWNER;
          why = "";
        }
      } catch (RuntimeException e) {
        verdict = Verdict.UNKNOWN;
        why = "etcd did not answer (" + e.getMessage() + ")";
      }
      synchronized (this) {
        reading = false;
        read = true;
        lastSentNanos = sent;
        lastVerdict = verdict;
        lastWhy = why;
        notifyAll();
      }
      // loops once more: this read was sent after the call began, so it decides
    }
  }

  /**
   * Whether this pserver may still be the shard's primary after a backup refused it as deposed
   * (NOT_PRIMARY): false only when etcd shows the shard another's or the lease is lost. A backup's
   * refusal is no proof: one that lost its lease, or is registering again and has not read the
   * primary's epoch yet, refuses the same way, and a primary that stepped down on its word would
   * give up the acknowledged pushes only its log holds.
   */
  boolean ownerDespiteRefusal(String refusal) {
    boolean owner;
    try {
      confirm();
      owner = true;
    } catch (OwnershipException e) {
      owner = e.verdict() != Verdict.NOT_OWNER;
    }
    log.warn(
        "{}: the backup says this pserver is not the primary ({}); etcd {}",
        key,
        refusal,
        owner ? "does not agree: it sends the backup a copy again" : "agrees: it steps down");
    return owner;
  }

  private ServiceException refused(Verdict verdict, String why) {
    String message =
        key
            + ": this pserver could not confirm it is still the shard's primary ("
            + why
            + "): the push is not acknowledged; retry on the primary registered in etcd";
    if (verdict == Verdict.NOT_OWNER) {
      log.warn(message);
    } else {
      log.debug(message);
    }
    return new OwnershipException(verdict, message);
  }

  /** A push refused because the ownership was not confirmed. */
  static final class OwnershipException extends ServiceException {
    private final Verdict verdict;

    OwnershipException(Verdict verdict, String message) {
      super(ErrorReason.SHUTTING_DOWN, message);
      this.verdict = verdict;
    }

    /** NOT_OWNER: the shard is another's; UNKNOWN: etcd did not answer. */
    Verdict verdict() {
      return verdict;
    }
  }
}
