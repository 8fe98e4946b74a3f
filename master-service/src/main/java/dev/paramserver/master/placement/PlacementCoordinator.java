package dev.paramserver.master.placement;

import dev.paramserver.adminapi.JobView;
import dev.paramserver.etcd.Coordinator;
import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.tensor.SlotMap;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The leader master's side of elastic placement (docs/explanation/elastic.md): {@link #scale} sets
 * the job's pserver count ({@code ps_desired}); a single worker thread then makes the committed
 * placement match it, one move at a time: begin the move in etcd, ask the slots' owner to move them
 * ({@code MoveOut}), commit, or roll back on any failure and plan again. After a shrink's last move
 * it asks each emptied pserver to shut down (it deregisters and exits 0) and forgets its checkpoint
 * key. A move left in etcd by a master that died is rolled back by the next leader.
 */
public final class PlacementCoordinator implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(PlacementCoordinator.class);
  private static final int HISTORY = 64;

  private final Coordinator coordinator;
  private final PlacementStore store;
  private final MasterElection election;
  private final ScalingProperties settings;
  private final PlacementPservers servers;
  private final EmptiedPservers emptied;
  private final ExecutorService worker = daemon("placement-coordinator");
  private final ScheduledExecutorService ticker =
      Executors.newSingleThreadScheduledExecutor(
          r -> {
            Thread t = new Thread(r, "placement-ticker");
            t.setDaemon(true);
            return t;
          });
  // guarded by this
  private final Deque<JobView.Move> history = new ArrayDeque<>();
  private ScalingPhase phase = ScalingPhase.IDLE;
  private String phaseDetail;
  private SlotMove current;
  private String lastError;
  private boolean queued;
  private volatile boolean closed;
  private volatile ScalingMetrics metrics;

  public PlacementCoordinator(
      Coordinator coordinator,
      MasterElection election,
      PserverCalls calls,
      ScalingProperties settings,
      String adminToken) {
    this.coordinator = coordinator;
    this.store = new PlacementStore(coordinator);
    this.election = election;
    this.settings = settings;
    this.servers = new PlacementPservers(coordinator, calls, settings);
    this.emptied = new EmptiedPservers(coordinator, servers, settings, adminToken, this::poll);
  }

  private static ExecutorService daemon(String name) {
    return Executors.newSingleThreadExecutor(
        r -> {
          Thread t = new Thread(r, name);
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Looks every {@code interval} whether the leader has placement work (a move left unfinished, or
   * a count to reach), so a new leader finishes what its predecessor began.
   */
  public void start(Duration interval) {
    ticker.scheduleWithFixedDelay(
        () -> {
          if (election.isLeader()) {
            wake();
          }
        },
        interval.toMillis(),
        interval.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /** Registers the coordinator's metrics. */
  public void bindTo(MeterRegistry registry) {
    metrics = new ScalingMetrics(registry);
  }

  /**
   * Asks for {@code pservers} pservers. Validates the job (initialised, asynchronous, no replicas),
   * writes {@code ps_desired} (with the initial map, the first time, in the same transaction) and
   * starts the moves in the background.
   *
   * @throws IllegalArgumentException when {@code pservers} is not positive
   * @throws IllegalStateException when this master is not the leader or the job cannot be scaled,
   *     naming why
   */
  public synchronized ScalingStatus scale(int pservers) {
    if (pservers <= 0) {
      throw new IllegalArgumentException("--pservers must be at least 1, got " + pservers);
    }
    if (!election.isLeader()) {
      throw new IllegalStateException("this master is not the leader");
    }
    if (!coordinator.kv().getPrefix(coordinator.keys().psBackupPrefix()).isEmpty()) {
      throw new IllegalStateException(
          "the job runs with replicas (ps_backup/ keys exist): scaling a job with replicas is not"
              + " supported yet");
    }
    PlacementStore.Read read = store.read();
    Optional<KeyValueStore.KeyValue> desiredKv =
        coordinator.kv().get(coordinator.keys().psDesired());
    int desired =
        desiredKv
            .map(kv -> Integer.parseInt(kv.valueAsString().trim()))
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "the job has no pservers yet (ps_desired is not set)"));
    int now = read.map().map(m -> (int) m.getPservers()).orElse(desired);
    byte[] value = Integer.toString(pservers).getBytes(StandardCharsets.UTF_8);
    boolean written;
    if (read.map().isEmpty()) {
      if (pservers == desired) {
        return view();
      }
      SlotMap initial = servers.initialMap(desired);
      Map<String, Long> fence = new LinkedHashMap<>();
      fence.put(coordinator.keys().placement(), 0L);
      fence.put(coordinator.keys().psDesired(), desiredKv.get().modRevision());
      written =
          coordinator
              .kv()
              .commitIfRevisions(
                  fence,
                  Map.of(
                      coordinator.keys().placement(),
                      initial.toProto().toByteArray(),
                      coordinator.keys().psDesired(),
                      value),
                  List.of());
    } else {
      servers.checkServers(now);
      written =
          coordinator
              .kv()
              .compareAndSwap(coordinator.keys().psDesired(), desiredKv.get().modRevision(), value);
    }
    if (!written) {
      throw new IllegalStateException(
          "the placement or ps_desired changed while scaling was asked for: ask again");
    }
    log.info("scaling the job from {} to {} pservers", now, pservers);
    wake();
    return view();
  }

  /**
   * {@link #scale} to {@code pservers} only when the job asks for fewer: what a new pserver of a
   * scaled-up StatefulSet asks for, so two that start at once never undo each other.
   */
  public synchronized ScalingStatus growTo(int pservers) {
    int desired = servers.desired();
    return pservers > desired ? scale(pservers) : view();
  }

  /** Starts (or resumes) the worker: at leadership, and after {@link #scale}. */
  public synchronized void wake() {
    if (queued || closed) {
      return;
    }
    queued = true;
    worker.execute(this::reconcileLoop);
  }

  /** What the console and {@code psctl scale} show: the map, the move under way, the last moves. */
  public synchronized ScalingStatus view() {
    Long epoch = null;
    Integer pservers = null;
    Integer desired = null;
    String error = null;
    try {
      PlacementStore.Read read = store.read();
      epoch = read.epoch();
      pservers = read.map().map(m -> m.getPservers()).orElse(null);
      desired = servers.desiredIfSet().orElse(null);
    } catch (RuntimeException e) {
      error = "etcd: " + e.getMessage();
    }
    return new ScalingStatus(
        epoch,
        pservers,
        desired,
        error,
        phase,
        phase.describe(phaseDetail),
        current == null ? null : ScalingStatus.move(current, null, null, null),
        lastError,
        new ArrayList<>(history));
  }

  private void reconcileLoop() {
    synchronized (this) {
      queued = false;
    }
    // a failed step is planned again after retry-delay, until done or this master stops leading
    Retry retry =
        new Retry(
            settings.retryDelay(), settings.retryDelay(), () -> closed || !election.isLeader());
    try {
      retry.until(
          "scaling the job",
          attempt -> {
            Step step = Step.AGAIN;
            while (step == Step.AGAIN && !closed && election.isLeader()) {
              step = reconcileOnce();
            }
            return step == Step.LATER ? Optional.empty() : Optional.of(step);
          });
    } catch (StoppedException e) {
      log.debug("placement: {}", e.getMessage());
    } catch (RuntimeException e) {
      log.warn("placement: {}", e.getMessage(), e);
      setPhase(ScalingPhase.FAILED, null, e.getMessage());
      return;
    }
    setPhase(ScalingPhase.IDLE, null, null); // done, or stopped: nothing under way here
  }

  /** What one step of {@link #reconcileOnce} leaves to do. */
  private enum Step {
    /** Nothing: the placement has ps_desired. */
    DONE,
    /** Another step, at once. */
    AGAIN,
    /** Another step, after {@link ScalingProperties#retryDelay}. */
    LATER
  }

  /** One step towards ps_desired. */
  private Step reconcileOnce() throws InterruptedException {
    PlacementStore.Read read = store.read();
    if (read.move().isPresent()) {
      SlotMove left = read.move().get();
      log.warn(
          "placement: rolling back move {} (epoch {}) left unfinished",
          left.getId(),
          left.getEpoch());
      store.abort(read);
      return Step.AGAIN;
    }
    if (read.map().isEmpty()) {
      return Step.DONE; // never scaled: the initial map of ps_desired is in force
    }
    int desired = servers.desired();
    SlotMap cur = SlotMap.fromProto(read.map().get());
    SlotMap target = cur.resized(desired);
    List<SlotMove> moves = cur.movesTo(target, settings.slotsPerMove());
    if (moves.isEmpty()) {
      emptied.shutDownFrom(desired, names -> setPhase(ScalingPhase.DRAINING, names, null));
      return Step.DONE;
    }
    for (int i = 0; i < desired; i++) {
      awaitRegistered(i);
    }
    try {
      servers.checkServers(desired);
    } catch (PserverUnreachableException e) {
      // a pserver killed and restarting: its registration may outlive it by its lease
      log.info("placement: a pserver did not answer ({}): planning again", e.getMessage());
      setPhase(ScalingPhase.WAITING_FOR_PSERVERS, null, e.getMessage());
      return Step.LATER;
    }
    for (SlotMove planned : moves) {
      if (closed || !election.isLeader()) {
        return Step.DONE;
      }
      PlacementStore.Read seen = store.read();
      SlotMap now = SlotMap.fromProto(seen.map().orElseThrow());
      SlotMove move =
          planned.toBuilder()
              .setEpoch(now.epoch() + 1)
              .setId("e" + (now.epoch() + 1) + "-" + planned.getFrom() + "to" + planned.getTo())
              // a retry after a rollback is another attempt: the pservers fence on it
              .setAttempt(ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE))
              .build();
      if (!moveOne(seen, now, move)) {
        return Step.LATER; // plan again from what is committed
      }
    }
    return Step.AGAIN;
  }

  /** Begins, runs and commits one move, or rolls it back: true when committed. */
  private boolean moveOne(PlacementStore.Read seen, SlotMap now, SlotMove move) {
    if (!store.begin(seen, move)) {
      return false;
    }
    synchronized (this) {
      current = move;
      setPhase(ScalingPhase.MOVING, null, null);
    }
    long start = System.nanoTime();
    try {
      MoveOutResponse answer = servers.moveOut(move);
      PlacementStore.Read moving = store.read();
      if (!moving.move().equals(Optional.of(move))
          || !store.commit(moving, now.with(move).toProto())) {
        throw new IllegalStateException(
            "the move was rolled back in etcd before its commit (by the old owner's timeout?)");
      }
      long ms = (System.nanoTime() - start) / 1_000_000;
      log.info(
          "placement: move {} committed: {} slots, {} blocks, {} rows, {} bytes, copy {} ms,"
              + " stall {} ms, {} ms in all",
          move.getId(),
          move.getSlotsCount(),
          move.getBlocksCount(),
          answer.getRows(),
          answer.getBytes(),
          answer.getCopyMs(),
          answer.getStallMs(),
          ms);
      ScalingMetrics m = metrics;
      if (m != null) {
        m.committed(move, answer);
      }
      remember(ScalingStatus.move(move, "committed", answer, ms), null);
      return true;
    } catch (RuntimeException e) {
      String why = e.getMessage();
      log.warn("placement: move {} failed, rolling it back: {}", move.getId(), why);
      PlacementStore.Read after = store.read();
      if (after.move().equals(Optional.of(move))) {
        store.abort(after);
      }
      ScalingMetrics m = metrics;
      if (m != null) {
        m.rolledBack();
      }
      remember(ScalingStatus.move(move, "rolled back: " + why, null, null), why);
      return false;
    }
  }

  private synchronized void remember(JobView.Move record, String error) {
    history.addLast(record);
    while (history.size() > HISTORY) {
      history.removeFirst();
    }
    current = null;
    lastError = error;
  }

  /** Enters {@code next} (checked by {@link ScalingPhase#to}), with its detail and an error. */
  private synchronized void setPhase(ScalingPhase next, String detail, String error) {
    phase = phase.to(next);
    phaseDetail = detail;
    if (error != null) {
      lastError = error;
    }
  }

  /** Looks every poll-interval until this master closes or stops leading. */
  private Retry poll() {
    return new Retry(
        settings.pollInterval(), settings.pollInterval(), () -> closed || !election.isLeader());
  }

  private void awaitRegistered(int index) {
    long deadline = System.nanoTime() + settings.registrationTimeout().toNanos();
    boolean registered =
        poll()
            .until(
                "waiting for pserver " + index + " to register",
                attempt -> {
                  if (servers.registered(index)) {
                    return Optional.of(true);
                  }
                  if (attempt == 1) {
                    setPhase(ScalingPhase.WAITING_FOR_REGISTRATION, Integer.toString(index), null);
                    log.info("placement: waiting for pserver {} to register", index);
                  }
                  return System.nanoTime() > deadline ? Optional.of(false) : Optional.empty();
                });
    if (!registered) {
      throw new IllegalStateException(
          "pserver "
              + index
              + " did not register within "
              + settings.registrationTimeout()
              + ": start it (compose --scale, the StatefulSet's replicas, or a pserver process)");
    }
  }

  @Override
  public void close() {
    closed = true;
    ticker.shutdownNow();
    worker.shutdownNow();
  }
}
