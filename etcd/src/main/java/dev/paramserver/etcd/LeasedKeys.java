package dev.paramserver.etcd;

import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keys a process holds under an etcd lease, kept across the loss of that lease. When the lease is
 * lost (etcd unreachable for its TTL, or this process paused past it) nothing is done under it any
 * more: {@link #lease()} waits while a new lease is granted and every key is put again under it
 * ({@link #put registrations} as they were; {@link #claim claims} only if still free or still
 * ours), then answers with the new lease. If that does not succeed within {@code renewWithin}, the
 * keys are {@link State#LOST lost} for good and the {@link #onLost} listeners run once: the process
 * should then end with a clear message.
 *
 * <p>Between the loss and the renewal the keys may be missing from etcd (their old lease ended
 * there): others see the holder gone for that gap, and a claim may be taken by someone else, in
 * which case it is dropped here (logged).
 *
 * <p>States: HELD → RENEWING → HELD ... ; RENEWING → LOST; any → CLOSED.
 */
public final class LeasedKeys implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(LeasedKeys.class);
  private static final long FIRST_RETRY_MILLIS = 200;
  private static final long MAX_RETRY_MILLIS = 2000;

  /** Where the keys stand. */
  public enum State {
    /** Held under a live lease. */
    HELD,
    /** The lease was lost; a new one is being granted and the keys put again. */
    RENEWING,
    /** The renewal gave up: the keys are gone for good. */
    LOST,
    /** Closed on purpose: the lease was revoked. */
    CLOSED;

    boolean canMoveTo(State next) {
      return switch (this) {
        case HELD -> next == RENEWING || next == CLOSED;
        case RENEWING -> next == HELD || next == LOST || next == CLOSED;
        case LOST -> next == CLOSED;
        case CLOSED -> false;
      };
    }
  }

  private final Coordinator coordinator;
  private final Duration ttl;
  private final Duration renewWithin;
  private final String owner;
  private final Map<String, byte[]> registrations = new LinkedHashMap<>(); // guarded by this
  private final Map<String, byte[]> claims = new LinkedHashMap<>(); // guarded by this
  private final List<Runnable> lostListeners = new CopyOnWriteArrayList<>();
  private final List<Runnable> renewedListeners = new CopyOnWriteArrayList<>();
  private State state = State.HELD; // guarded by this
  private Lease lease; // guarded by this
  private String lostBecause = ""; // guarded by this
  private long renewals; // guarded by this

  private LeasedKeys(Coordinator coordinator, Duration ttl, Duration renewWithin, String owner) {
    this.coordinator = coordinator;
    this.ttl = ttl;
    this.renewWithin = renewWithin;
    this.owner = owner;
  }

  /**
   * Grants the first lease (failing as {@link Coordinator#grantLease} does).
   *
   * @param ttl the time-to-live of each lease
   * @param renewWithin how long to keep trying to renew a lost lease before giving up
   * @param owner who holds the keys, for log lines and messages ({@code trainer 'trainer-0'})
   */
  public static LeasedKeys open(
      Coordinator coordinator, Duration ttl, Duration renewWithin, String owner) {
    return adopt(coordinator, coordinator.grantLease(ttl), renewWithin, owner);
  }

  /**
   * Holds keys under {@code first}, a lease granted by {@code coordinator}; the leases that follow
   * have its TTL.
   */
  public static LeasedKeys adopt(
      Coordinator coordinator, Lease first, Duration renewWithin, String owner) {
    if (renewWithin == null || renewWithin.isNegative() || renewWithin.isZero()) {
      throw new IllegalArgumentException("renewWithin must be positive, got " + renewWithin);
    }
    LeasedKeys keys = new LeasedKeys(coordinator, first.ttl(), renewWithin, owner);
    synchronized (keys) {
      keys.lease = first;
    }
    first.onLost(() -> keys.leaseLost(first));
    return keys;
  }

  /** Puts {@code key} under the lease now, and again under every lease that follows. */
  public void put(String key, byte[] value) {
    underLease(
        l -> {
          coordinator.kv().put(key, value, l);
          return true;
        });
    synchronized (this) {
      registrations.put(key, value.clone());
    }
  }

  /**
   * Runs {@code call} under the live lease. If it fails because that lease has ended although it
   * was not counted lost yet (this process was paused past the TTL and its keep-alive has not run
   * since, or etcd answers that it no longer knows the lease), the lease is renewed now and the
   * call made once more under the new one, instead of failing on the dead lease.
   */
  private boolean underLease(Predicate<Lease> call) {
    Lease l = lease();
    try {
      return call.test(l);
    } catch (CoordinationException e) {
      if (l.isAlive() && !EtcdCalls.isLeaseNotFound(e)) {
        throw e;
      }
      log.info("{}: lease {} has ended ({}); renewing it first", owner, hex(l), e.getMessage());
      leaseLost(l);
      return call.test(lease());
    }
  }

  /**
   * Creates {@code key} under the lease if it does not exist, or finds it holding {@code value}
   * already (ours, from an earlier lease or call). A claim won is put again under every lease that
   * follows, as long as nobody else took it in a gap.
   *
   * @return whether this holder has the key
   */
  public boolean claim(String key, byte[] value) {
    if (!underLease(l -> claimUnder(l, key, value))) {
      return false;
    }
    synchronized (this) {
      claims.put(key, value.clone());
    }
    return true;
  }

  /** Takes {@code key} if absent or ours (moving it under {@code l}); false if another holds it. */
  private boolean claimUnder(Lease l, String key, byte[] value) {
    KeyValueStore kv = coordinator.kv();
    if (kv.putIfAbsent(key, value, l)) {
      return true;
    }
    Optional<KeyValueStore.KeyValue> now = kv.get(key);
    if (now.isEmpty()) {
      return kv.putIfAbsent(key, value, l); // it ended meanwhile
    }
    if (!Arrays.equals(now.get().value(), value)) {
      return false;
    }
    if (now.get().leaseId() != l.id()) {
      kv.put(key, value, l); // ours under an earlier lease, which is ending: move it
    }
    return true;
  }

  /** Forgets {@code key} (deleting it from etcd is the caller's). */
  public synchronized void release(String key) {
    registrations.remove(key);
    claims.remove(key);
  }

  /**
   * The live lease, waiting up to the renewal time while a lost one is being renewed.
   *
   * @throws CoordinationException naming the owner when the keys are lost or closed, or still being
   *     renewed when the wait ends
   */
  public Lease lease() {
    long deadline = System.nanoTime() + renewWithin.toNanos();
    synchronized (this) {
      while (true) {
        switch (state) {
          case HELD -> {
            if (lease.isAlive()) {
              return lease;
            }
            // its TTL ran out unnoticed (this process was paused past it and its keep-alive has
            // not run since): renew it now rather than hand out a dead lease
            leaseLost(lease);
          }
          case LOST -> throw new CoordinationException(lostMessage());
          case CLOSED -> throw new CoordinationException(owner + " has left: its lease is revoked");
          case RENEWING -> {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
              throw new CoordinationException(
                  owner + " lost its etcd lease and has not renewed it within " + renewWithin);
            }
            try {
              wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
              throw new CoordinationException(owner + ": interrupted waiting for a new lease", e);
            }
          }
        }
      }
    }
  }

  public synchronized State state() {
    return state;
  }

  /** True while the keys are held under a lease etcd keeps. */
  public synchronized boolean isHeld() {
    return state == State.HELD && lease.isAlive();
  }

  /** How many times a lost lease was replaced. */
  public synchronized long renewals() {
    return renewals;
  }

  /** Runs {@code listener} once if the renewal gives up (not when closed on purpose). */
  public void onLost(Runnable listener) {
    boolean now;
    synchronized (this) {
      now = state == State.LOST;
      if (!now) {
        lostListeners.add(listener);
      }
    }
    if (now) {
      listener.run();
    }
  }

  /** Runs {@code listener} after each renewal, once the keys are put again. */
  public void onRenewed(Runnable listener) {
    renewedListeners.add(listener);
  }

  private void leaseLost(Lease lost) {
    synchronized (this) {
      if (lease != lost || !moveTo(State.RENEWING)) {
        return;
      }
    }
    log.warn(
        "{} lost its etcd lease {}: nothing more is done under it; taking a new lease and putting"
            + " its keys again (giving up after {})",
        owner,
        hex(lost),
        renewWithin);
    Thread t = new Thread(this::renew, "lease-renewal");
    t.setDaemon(true);
    t.start();
  }

  /** Grants leases and puts the keys under them until one attempt succeeds or time runs out. */
  private void renew() {
    long started = System.nanoTime();
    long deadline = started + renewWithin.toNanos();
    long pause = FIRST_RETRY_MILLIS;
    String lastError = "";
    while (System.nanoTime() < deadline) {
      synchronized (this) {
        if (state != State.RENEWING) {
          return;
        }
      }
      Lease next = null;
      try {
        next = coordinator.grantLease(ttl);
        restoreUnder(next);
        if (installed(next)) {
          log.info(
              "{} renewed its etcd lease as {} after {} ms; its keys are back",
              owner,
              Long.toHexString(next.id()),
              TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
          renewedListeners.forEach(LeasedKeys::runQuietly);
        }
        return;
      } catch (RuntimeException e) {
        lastError = e.getMessage();
        log.debug("{}: renewing the etcd lease failed, retrying: {}", owner, e.toString());
        if (next != null) {
          revokeQuietly(next);
        }
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      pause = Math.min(MAX_RETRY_MILLIS, pause * 2);
    }
    giveUp(
        "could not take a new etcd lease within "
            + renewWithin
            + " (last error: "
            + lastError
            + ")");
  }

  /** Puts the registrations and re-takes the claims under {@code next}. */
  private void restoreUnder(Lease next) {
    Map<String, byte[]> puts;
    Map<String, byte[]> held;
    synchronized (this) {
      puts = new LinkedHashMap<>(registrations);
      held = new LinkedHashMap<>(claims);
    }
    for (var e : puts.entrySet()) {
      coordinator.kv().put(e.getKey(), e.getValue(), next);
    }
    for (var e : held.entrySet()) {
      if (!claimUnder(next, e.getKey(), e.getValue())) {
        log.warn("{}: {} was taken by another holder while our lease was lost", owner, e.getKey());
        synchronized (this) {
          claims.remove(e.getKey());
        }
      }
    }
  }

  /** Makes {@code next} the lease, unless the keys were closed meanwhile. */
  private boolean installed(Lease next) {
    synchronized (this) {
      if (state != State.RENEWING) {
        revokeQuietly(next);
        return false;
      }
      lease = next;
      renewals++;
      moveTo(State.HELD);
      notifyAll();
    }
    next.onLost(() -> leaseLost(next));
    return true;
  }

  private void giveUp(String why) {
    synchronized (this) {
      if (!moveTo(State.LOST)) {
        return;
      }
      lostBecause = why;
      notifyAll();
    }
    log.error("{}: {}", owner, lostMessage());
    lostListeners.forEach(LeasedKeys::runQuietly);
  }

  private synchronized String lostMessage() {
    return owner + " lost its etcd lease for good: " + lostBecause;
  }

  private boolean moveTo(State next) {
    if (!state.canMoveTo(next)) {
      return false;
    }
    state = next;
    return true;
  }

  /** Revokes the lease (its keys vanish at once) and stops any renewal. Idempotent. */
  @Override
  public void close() {
    Lease l;
    synchronized (this) {
      if (!moveTo(State.CLOSED)) {
        return;
      }
      l = lease;
      notifyAll();
    }
    revokeQuietly(l);
  }

  private static void revokeQuietly(Lease l) {
    try {
      l.revoke();
    } catch (RuntimeException e) {
      log.debug("revoking lease {} failed: {}", Long.toHexString(l.id()), e.toString());
    }
  }

  private static String hex(Lease l) {
    return Long.toHexString(l.id());
  }

  private static void runQuietly(Runnable r) {
    try {
      r.run();
    } catch (RuntimeException e) {
      log.warn("lease listener failed", e);
    }
  }

  @Override
  public synchronized String toString() {
    return "LeasedKeys[" + owner + ", " + state + ", " + lease + "]";
  }
}
