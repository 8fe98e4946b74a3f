package dev.paramserver.pserver.shard;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.AppliedPushes;
import dev.paramserver.proto.v1.AppliedStep;
import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.proto.v1.PushPart;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * Per trainer run (trainer id, session, origin): which pushes a shard applied, as a window. Every
 * step up to {@code complete} counts as applied; for each step above it, the parts applied. Decides
 * whether a push is a duplicate (see {@code ParameterServer.PushGradients}). {@code complete}
 * advances with the pushes recorded: to a windowed push's {@code acknowledged_through} (the trainer
 * holds the answers of every step up to it, so none of them is sent again but as a duplicate), or,
 * for a push without it (one step at a time), to the step below it. A push is checked and recorded
 * while its run's {@link Run} monitor is held, so two copies of one push in flight at once apply
 * once.
 *
 * <p>{@code origin} (elastic placement) is the pserver a push was first sent to, as its index + 1
 * (0: this one): a piece another pserver refused with MOVED and the trainer resent here has the
 * step and part numbers of that server's part, so it is kept apart from this server's own part of
 * the same step.
 *
 * <p>The records are pruned ({@link #configure}): a run idle for longer than the window, or the run
 * idle longest when there are more than the most runs kept, is dropped and leaves a tombstone (a
 * 64-bit hash of its identity and the highest step it recorded). A push of that identity at or
 * below that step is then refused (PUSH_WINDOW_EXCEEDED, it may have been applied: it is never
 * applied twice); steps above it start a new record. As many tombstones are kept as runs, in memory
 * only.
 */
final class AppliedSteps {
  /** The most steps above a windowed push's {@code acknowledged_through} a shard keeps track of. */
  static final int WINDOW = 1024;

  private final Map<String, Run> runs = new ConcurrentHashMap<>();
  private final LongSupplier nanoClock;
  // guarded by itself: hash of a dropped run's identity -> the highest step it recorded
  private final LinkedHashMap<Long, Long> dropped = new LinkedHashMap<>();
  private volatile long idleNanos = Duration.ofHours(1).toNanos();
  private volatile int maxRuns = 100_000;
  private volatile long lastPrune;

  AppliedSteps() {
    this(System::nanoTime);
  }

  AppliedSteps(LongSupplier nanoClock) {
    this.nanoClock = nanoClock;
    this.lastPrune = nanoClock.getAsLong();
  }

  /**
   * Sets the pruning window: runs idle longer than {@code idle} are dropped, and at most {@code
   * maxRuns} runs (and as many tombstones) are kept.
   */
  void configure(Duration idle, int maxRuns) {
    if (idle.isNegative() || idle.isZero() || maxRuns < 1) {
      throw new IllegalArgumentException(
          "applied-push records need a positive window and run count, got "
              + idle
              + " and "
              + maxRuns);
    }
    this.idleNanos = idle.toNanos();
    this.maxRuns = maxRuns;
  }

  /** One trainer run's record; synchronise on it to check, apply and record a push atomically. */
  final class Run {
    final String trainerId;
    final String session;
    final int origin;
    private long complete;
    // steps are uint64: ordered unsigned
    private final TreeMap<Long, BitSet> open = new TreeMap<>(Long::compareUnsigned);
    // a dropped identity's highest step (0: none): a step at or below it not recorded here may
    // have been applied before the drop
    private long floor;
    private long lastUsed;
    // dropped from the map: refuses what it has not recorded (a new run takes its place)
    private boolean dead;

    private Run(String trainerId, String session, int origin) {
      this.trainerId = trainerId;
      this.session = session;
      this.origin = origin;
      this.lastUsed = nanoClock.getAsLong();
    }

    /**
     * True if push (step, part) of this run was applied already.
     *
     * @throws ServiceException PUSH_WINDOW_EXCEEDED for a step the dropped record of this identity
     *     may have held
     */
    boolean applied(long pushStep, int part) {
      if (Long.compareUnsigned(pushStep, complete) <= 0) {
        return true;
      }
      BitSet parts = open.get(pushStep);
      if (parts != null && parts.get(part)) {
        return true;
      }
      if (dead || Long.compareUnsigned(pushStep, floor) <= 0) {
        throw new ServiceException(
            ErrorReason.PUSH_WINDOW_EXCEEDED,
            "push step "
                + Long.toUnsignedString(pushStep)
                + " of trainer '"
                + trainerId
                + "' (session '"
                + session
                + "') was sent after this pserver dropped the record of that trainer's pushes"
                + " (idle longer than paramserver.pserver.limits.applied-window, or past"
                + " limits.applied-identities): it may have been applied, so it is not applied"
                + " again; push later steps");
      }
      return false;
    }

    private long highest() {
      return open.isEmpty() ? Math.max(complete, floor) : Math.max(open.lastKey(), floor);
    }

    void record(PushGradientsRequest request) {
      lastUsed = nanoClock.getAsLong();
      long pushStep = request.getStep();
      long done =
          request.hasAcknowledgedThrough() ? request.getAcknowledgedThrough() : pushStep - 1;
      if (Long.compareUnsigned(done, complete) > 0) {
        complete = done;
        open.headMap(done, true).clear();
      }
      if (Long.compareUnsigned(pushStep, complete) > 0) {
        open.computeIfAbsent(pushStep, s -> new BitSet()).set(request.getPart());
      }
    }

    private AppliedPushes toProto() {
      AppliedPushes.Builder b =
          AppliedPushes.newBuilder()
              .setTrainerId(trainerId)
              .setSession(session)
              .setOrigin(origin)
              .setCompleteThrough(complete);
      for (Map.Entry<Long, BitSet> e : open.entrySet()) {
        AppliedStep.Builder s = AppliedStep.newBuilder().setStep(e.getKey());
        e.getValue().stream().forEach(s::addParts);
        b.addOpenSteps(s);
      }
      if (open.isEmpty()) {
        b.setStep(complete);
      } else {
        b.setStep(open.lastKey());
        open.lastEntry().getValue().stream().forEach(b::addParts);
      }
      return b.build();
    }
  }

  /** True when {@code request} carries an identity (step > 0). */
  static boolean identified(PushGradientsRequest request) {
    return request.getStep() > 0;
  }

  /**
   * Refuses an identified push whose {@code acknowledged_through} is not below its step, or whose
   * step is more than {@link #WINDOW} above it.
   *
   * @throws ServiceException BAD_ARGUMENT or PUSH_WINDOW_EXCEEDED, naming both numbers
   */
  static void checkWindow(PushGradientsRequest request) {
    if (!identified(request) || !request.hasAcknowledgedThrough()) {
      return;
    }
    long step = request.getStep();
    long acked = request.getAcknowledgedThrough();
    if (Long.compareUnsigned(acked, step) >= 0) {
      throw new ServiceException(
          ErrorReason.BAD_ARGUMENT,
          "push step "
              + Long.toUnsignedString(step)
              + " has acknowledged_through "
              + Long.toUnsignedString(acked)
              + ": it must be below the step");
    }
    if (Long.compareUnsigned(step - acked, WINDOW) > 0) {
      throw new ServiceException(
          ErrorReason.PUSH_WINDOW_EXCEEDED,
          "push step "
              + Long.toUnsignedString(step)
              + " is "
              + Long.toUnsignedString(step - acked)
              + " steps above acknowledged_through "
              + Long.toUnsignedString(acked)
              + ": a pserver keeps at most "
              + WINDOW
              + " steps unacknowledged per trainer; wait for answers before sending more");
    }
  }

  /** The record of the request's run (created empty, or from its tombstone). */
  Run run(PushGradientsRequest request) {
    String key = key(request.getTrainerId(), request.getSession(), request.getOrigin());
    Run r = runs.get(key);
    if (r != null) {
      return r;
    }
    r =
        runs.computeIfAbsent(
            key,
            k -> {
              Run n = new Run(request.getTrainerId(), request.getSession(), request.getOrigin());
              synchronized (dropped) {
                Long floor = dropped.remove(hash(k));
                n.floor = floor == null ? 0 : floor;
              }
              return n;
            });
    pruneIfDue();
    return r;
  }

  /** Drops runs idle past the window, and the idlest past the most runs kept. */
  void pruneIfDue() {
    long now = nanoClock.getAsLong();
    if (runs.size() <= maxRuns && now - lastPrune < idleNanos / 16) {
      return;
    }
    lastPrune = now;
    List<Map.Entry<String, Run>> idlest = new ArrayList<>();
    for (Map.Entry<String, Run> e : runs.entrySet()) {
      Run r = e.getValue();
      long used;
      synchronized (r) {
        used = r.lastUsed;
      }
      if (now - used > idleNanos) {
        drop(e.getKey(), r);
      } else {
        idlest.add(e);
      }
    }
    int excess = runs.size() - maxRuns;
    if (excess > 0) {
      idlest.sort(Comparator.comparingLong(e -> lastUsedOf(e.getValue())));
      for (int i = 0; i < excess && i < idlest.size(); i++) {
        drop(idlest.get(i).getKey(), idlest.get(i).getValue());
      }
    }
  }

  private static long lastUsedOf(Run r) {
    synchronized (r) {
      return r.lastUsed;
    }
  }

  private void drop(String key, Run r) {
    synchronized (r) {
      if (r.dead) {
        return;
      }
      r.dead = true;
      synchronized (dropped) {
        // put before the run leaves the map: a new run of this identity finds the tombstone
        dropped.put(hash(key), r.highest());
        while (dropped.size() > maxRuns) {
          dropped.remove(dropped.keySet().iterator().next());
        }
      }
      runs.remove(key, r);
    }
  }

  /** Runs kept now (tests). */
  int runCount() {
    return runs.size();
  }

  private static long hash(String key) {
    long h = 0xcbf29ce484222325L;
    for (int i = 0; i < key.length(); i++) {
      h ^= key.charAt(i);
      h *= 0x100000001b3L;
    }
    return h;
  }

  /** True if {@code request} (identified) was applied already; records nothing. */
  boolean applied(PushGradientsRequest request) {
    // a lookup, not run(): a push refused after this check must leave no record of its run
    Run r = runs.get(key(request.getTrainerId(), request.getSession(), request.getOrigin()));
    if (r == null) {
      return false;
    }
    synchronized (r) {
      return r.applied(request.getStep(), request.getPart());
    }
  }

  /** Records {@code request} (identified or not) as applied. */
  void record(PushGradientsRequest request) {
    if (!identified(request)) {
      return;
    }
    while (true) {
      Run r = run(request);
      synchronized (r) {
        if (!r.dead) {
          r.record(request);
          return;
        }
      }
    }
  }

  /**
   * True if a request {@code request} was cut from ({@code resent_from}) was applied: this server
   * applied it, or it came with moved slots. Only for a resent piece (a lookup per earlier request,
   * none for a push that has none). {@code selfIndex} is this server's index: an earlier request
   * first sent here (origin {@code selfIndex + 1}) is recorded under origin 0.
   */
  boolean appliedEarlier(PushGradientsRequest request, int selfIndex) {
    for (PushPart p : request.getResentFromList()) {
      if (appliedAs(request, p.getOrigin(), p.getPart())
          || (selfIndex >= 0
              && p.getOrigin() == selfIndex + 1
              && appliedAs(request, 0, p.getPart()))) {
        return true;
      }
    }
    return false;
  }

  private boolean appliedAs(PushGradientsRequest request, int origin, int part) {
    Run r = runs.get(key(request.getTrainerId(), request.getSession(), origin));
    if (r == null) {
      return false;
    }
    synchronized (r) {
      return r.applied(request.getStep(), part);
    }
  }

  /**
   * The records as a slot move's copy carries them: origin 0 (pushes first sent to this server,
   * {@code fromIndex}) named as {@code fromIndex + 1}, as the new owner knows them.
   */
  List<AppliedPushes> forMove(int fromIndex) {
    List<AppliedPushes> out = new ArrayList<>();
    for (AppliedPushes a : toProto()) {
      out.add(a.getOrigin() == 0 ? a.toBuilder().setOrigin(fromIndex + 1).build() : a);
    }
    return out;
  }

  /**
   * Adds a slot move's records (format 3, see {@link #forMove}) to this server's: a push either
   * records as applied counts as applied. Both say what was applied to the rows where they are now:
   * a push is applied whole at the one server owning its rows, and its effect moves with them.
   */
  void merge(List<AppliedPushes> entries) {
    for (AppliedPushes e : entries) {
      Run r =
          runs.computeIfAbsent(
              key(e.getTrainerId(), e.getSession(), e.getOrigin()),
              k -> new Run(e.getTrainerId(), e.getSession(), e.getOrigin()));
      synchronized (r) {
        if (Long.compareUnsigned(e.getCompleteThrough(), r.complete) > 0) {
          r.complete = e.getCompleteThrough();
          r.open.headMap(r.complete, true).clear();
        }
        for (AppliedStep s : e.getOpenStepsList()) {
          if (Long.compareUnsigned(s.getStep(), r.complete) > 0) {
            BitSet parts = r.open.computeIfAbsent(s.getStep(), x -> new BitSet());
            s.getPartsList().forEach(parts::set);
          }
        }
      }
    }
  }

  private static String key(String trainerId, String session, int origin) {
    return trainerId + '\u0000' + session + '\u0000' + Integer.toUnsignedString(origin);
  }

  /** The records as checkpoint entries (format 3), sorted by trainer and session. */
  List<AppliedPushes> toProto() {
    List<AppliedPushes> out = new ArrayList<>();
    for (Run r : runs.values()) {
      synchronized (r) {
        out.add(r.toProto());
      }
    }
    out.sort(
        Comparator.comparing(AppliedPushes::getTrainerId)
            .thenComparing(AppliedPushes::getSession)
            .thenComparingInt(AppliedPushes::getOrigin));
    return out;
  }

  /**
   * Replaces the records with a checkpoint's.
   *
   * @param formatVersion the checkpoint's format: before 3, an entry is its highest step and the
   *     parts of it, every lower step counting as applied
   */
  void restore(List<AppliedPushes> entries, int formatVersion) {
    runs.clear();
    for (AppliedPushes e : entries) {
      Run r = new Run(e.getTrainerId(), e.getSession(), e.getOrigin());
      if (formatVersion >= 3) {
        r.complete = e.getCompleteThrough();
        for (AppliedStep s : e.getOpenStepsList()) {
          BitSet parts = new BitSet();
          s.getPartsList().forEach(parts::set);
          r.open.put(s.getStep(), parts);
        }
      } else if (e.getStep() != 0) {
        r.complete = e.getStep() - 1;
        BitSet parts = new BitSet();
        e.getPartsList().forEach(parts::set);
        r.open.put(e.getStep(), parts);
      }
      runs.put(key(e.getTrainerId(), e.getSession(), e.getOrigin()), r);
    }
  }

  void clear() {
    runs.clear();
  }
}
