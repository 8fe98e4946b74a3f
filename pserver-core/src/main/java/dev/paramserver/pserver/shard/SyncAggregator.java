package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.TrainingMode;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The synchronous modes of a shard.
 *
 * <p>SYNC: the open step {@code s} (= the shard's update count) collects one gradient from every
 * trainer that was live when the step opened; a trainer that joins later, or pushes twice, is
 * counted in the next step. When every expected trainer that is still live has contributed, the sum
 * is applied once and the shard's count becomes {@code s+1}; only then do the pushes return, so a
 * returned push means "applied". A trainer whose lease dies is dropped, so a step waits at most
 * about the lease TTL for it. Pulls with {@code min_step = s+1} wait for the step.
 *
 * <p>BOUNDED_STALENESS: pushes are applied as they arrive, but a trainer may be at most {@code
 * staleness} pushes ahead of the slowest live trainer; a push further ahead waits.
 *
 * <p>Every wait runs on the caller's thread (never a gRPC thread: the adapter offloads these calls)
 * and ends after {@code timeout} with SYNC_ABORTED.
 */
public final class SyncAggregator {
  private static final Logger log = LoggerFactory.getLogger(SyncAggregator.class);

  private final ParameterShard shard;
  private final TrainerMembership membership;
  private final long timeoutNanos;

  // SYNC state, guarded by this.
  private long openStep = -1;
  private Set<String> expected;
  private Map<String, Contribution> contributions = new LinkedHashMap<>();
  private Map<String, Contribution> queued = new LinkedHashMap<>();
  private String aborted;
  // BOUNDED_STALENESS state, guarded by this.
  private final Map<String, Long> pushes = new HashMap<>();
  private final Set<String> everLive = new HashSet<>();
  private int boundedWaiters;

  public SyncAggregator(ParameterShard shard, TrainerMembership membership, Duration timeout) {
    this.shard = shard;
    this.membership = membership;
    this.timeoutNanos = timeout.toNanos();
    membership.subscribe(this::onMembershipChange);
    onMembershipChange();
  }

  /** One trainer's gradients for a step, and when they were applied. */
  private static final class Contribution {
    final ValidatedPush push;
    long appliedAt = -1;

    Contribution(ValidatedPush push) {
      this.push = push;
    }
  }

  /**
   * Adds a validated push; returns the shard's update count once it was applied, or -1 if it had
   * been applied before (a duplicate).
   */
  long contribute(String trainerId, long trainerStep, ValidatedPush push) {
    if (shard.mode() == TrainingMode.BOUNDED_STALENESS) {
      return boundedPush(trainerId, push);
    }
    synchronized (this) {
      checkNotAborted();
      if (shard.pushes.alreadyApplied(push.request)) {
        return -1;
      }
      openIfNeeded();
      Contribution same = sameAs(contributions.get(trainerId), push);
      if (same == null) {
        same = sameAs(queued.get(trainerId), push);
      }
      if (same != null) {
        // A retry of a push still waiting for its step: wait for that one, do not add it twice.
        return awaitApplied(trainerId, same);
      }
      Contribution mine = new Contribution(push);
      if (contributions.containsKey(trainerId)
          || (!expected.isEmpty() && !expected.contains(trainerId))) {
        if (queued.containsKey(trainerId)) {
          throw new ServiceException(
              ErrorReason.SYNC_ABORTED,
              "trainer '"
                  + trainerId
                  + "' already has gradients waiting for step "
                  + (openStep + 1)
                  + ": push once per step and wait for it");
        }
        queued.put(trainerId, mine);
      } else {
        contributions.put(trainerId, mine);
      }
      tryComplete();
      return awaitApplied(trainerId, mine);
    }
  }

  /** The pending contribution {@code c} if it carries the same identified push, else null. */
  private static Contribution sameAs(Contribution c, ValidatedPush push) {
    if (c == null || c.push.request == null || push.request == null) {
      return null;
    }
    var a = c.push.request;
    var b = push.request;
    return a.getStep() > 0
            && a.getStep() == b.getStep()
            && a.getPart() == b.getPart()
            && a.getSession().equals(b.getSession())
        ? c
        : null;
  }

  /** Waits (holding this monitor) until {@code mine} was applied or the wait timed out. */
  private long awaitApplied(String trainerId, Contribution mine) {
    long deadline = System.nanoTime() + timeoutNanos;
    while (mine.appliedAt < 0) {
      checkNotAborted();
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        withdraw(trainerId, mine);
        throw new ServiceException(
            ErrorReason.SYNC_ABORTED,
            "step "
                + openStep
                + " did not complete within "
                + Duration.ofNanos(timeoutNanos)
                + ": still waiting for trainers "
                + missing()
                + "; the push was withdrawn, push again");
      }
      waitNanos(left);
    }
    return mine.appliedAt;
  }

  /** Waits until the shard reached {@code minStep}, unless no pending step can reach it. */
  synchronized void awaitStep(long minStep) {
    long deadline = System.nanoTime() + timeoutNanos;
    while (shard.step() < minStep) {
      checkNotAborted();
      if (shard.mode() != TrainingMode.SYNC || minStep > shard.step() + 1) {
        // Only the next step can be waited for; a later one (for example asked for by a trainer
        // whose count ran ahead of a restored shard) is answered now rather than never.
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new ServiceException(
            ErrorReason.SYNC_ABORTED,
            "step "
                + minStep
                + " was not reached within "
                + Duration.ofNanos(timeoutNanos)
                + ": waiting for trainers "
                + missing());
      }
      waitNanos(left);
    }
  }

  /** Contributions waiting for a SYNC step, plus pushes held back by bounded staleness. */
  synchronized int pending() {
    return contributions.size() + queued.size() + boundedWaiters;
  }

  /** Fails every waiting call (shutdown). */
  synchronized void abortAll(String why) {
    aborted = why;
    notifyAll();
  }

  /** Forgets every pending contribution (the shard was reset or restored). */
  synchronized void reset() {
    openStep = -1;
    expected = null;
    contributions = new LinkedHashMap<>();
    queued = new LinkedHashMap<>();
    pushes.clear();
    notifyAll();
  }

  private void checkNotAborted() {
    if (aborted != null) {
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, aborted);
    }
  }

  private void openIfNeeded() {
    if (expected == null || openStep != shard.step()) {
      openStep = shard.step();
      expected = new HashSet<>(membership.live());
      expected.addAll(contributions.keySet());
      if (expected.isEmpty()) {
        log.warn("sync step {} opens with no live trainer registered in etcd", openStep);
      }
    }
  }

  private Set<String> missing() {
    Set<String> live = membership.live();
    Set<String> out = new TreeSet<>();
    if (expected != null) {
      for (String t : expected) {
        if (live.contains(t) && !contributions.containsKey(t)) {
          out.add(t);
        }
      }
    }
    return out;
  }

  private void tryComplete() {
    while (expected != null && missing().isEmpty()) {
      if (contributions.isEmpty()) {
        if (queued.isEmpty()) {
          return;
        }
        // Every expected trainer died before contributing: the step starts over with the
        // trainers that are waiting for it.
        nextStep();
        continue;
      }
      List<ValidatedPush> all = contributions.values().stream().map(c -> c.push).toList();
      long reached = shard.pushes.applySummed(all);
      for (Contribution c : contributions.values()) {
        c.appliedAt = reached;
      }
      log.debug("sync step {} applied with {} contributions", reached - 1, all.size());
      // Still holding this monitor: no other step can be applied before the listener returns.
      shard.events().syncStepApplied(reached);
      nextStep();
      notifyAll();
    }
  }

  private void nextStep() {
    contributions = queued;
    queued = new LinkedHashMap<>();
    expected = null;
    openIfNeeded();
  }

  private void withdraw(String trainerId, Contribution c) {
    contributions.remove(trainerId, c);
    queued.remove(trainerId, c);
  }

  private synchronized void onMembershipChange() {
    Set<String> live = membership.live();
    everLive.addAll(live);
    pushes.keySet().removeIf(t -> everLive.contains(t) && !live.contains(t));
    // A trainer that joins starts level with the slowest, so it holds nobody back.
    long start = slowest(Long.MAX_VALUE);
    for (String t : live) {
      pushes.putIfAbsent(t, start);
    }
    if (expected != null) {
      tryComplete();
    }
    notifyAll();
  }

  private long boundedPush(String trainerId, ValidatedPush push) {
    synchronized (this) {
      long deadline = System.nanoTime() + timeoutNanos;
      long mine = pushes.computeIfAbsent(trainerId, t -> slowest(Long.MAX_VALUE));
      while (mine - slowest(mine) > shard.staleness()) {
        checkNotAborted();
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new ServiceException(
              ErrorReason.SYNC_ABORTED,
              "trainer '"
                  + trainerId
                  + "' is "
                  + (mine - slowest(mine))
                  + " pushes ahead of the slowest trainer (staleness "
                  + shard.staleness()
                  + ") and the others did not catch up within "
                  + Duration.ofNanos(timeoutNanos));
        }
        boundedWaiters++;
        try {
          waitNanos(left);
        } finally {
          boundedWaiters--;
        }
        mine = pushes.getOrDefault(trainerId, slowest(Long.MAX_VALUE));
      }
    }
    long step = shard.pushes.applyOne(push);
    if (step < 0) {
      return step;
    }
    synchronized (this) {
      pushes.merge(trainerId, 1L, Long::sum);
      notifyAll();
    }
    return step;
  }

  /** Fewest pushes among live trainers that pushed, or {@code dflt} when none did. */
  private long slowest(long dflt) {
    Set<String> live = membership.live();
    long min = Long.MAX_VALUE;
    for (Map.Entry<String, Long> e : pushes.entrySet()) {
      if (live.contains(e.getKey()) || !everLive.contains(e.getKey())) {
        min = Math.min(min, e.getValue());
      }
    }
    return min == Long.MAX_VALUE ? (dflt == Long.MAX_VALUE ? 0 : dflt) : min;
  }

  private void waitNanos(long nanos) {
    try {
      wait(Math.max(1, nanos / 1_000_000));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ServiceException(ErrorReason.SHUTTING_DOWN, "interrupted while waiting for a step");
    }
  }
}
