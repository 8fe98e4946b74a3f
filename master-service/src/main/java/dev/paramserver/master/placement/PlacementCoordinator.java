package dev.paramserver.master.placement;

import dev.paramserver.adminapi.AdminClient;
import dev.paramserver.adminapi.JobView;
import dev.paramserver.coordination.Coordinator;
import dev.paramserver.coordination.KeyValueStore;
import dev.paramserver.coordination.PlacementStore;
import dev.paramserver.master.election.MasterElection;
import dev.paramserver.proto.v1.GetShardStatusRequest;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.ParameterServerGrpc;
import dev.paramserver.proto.v1.ReplicaRole;
import dev.paramserver.proto.v1.ShardStatus;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.proto.v1.TrainingMode;
import dev.paramserver.rpc.ChannelFactory;
import dev.paramserver.rpc.Retry;
import dev.paramserver.rpc.RpcErrors;
import dev.paramserver.rpc.StoppedException;
import dev.paramserver.tensor.BlockSpec;
import dev.paramserver.tensor.SlotMap;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
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
  private final ChannelFactory channels;
  private final ScalingProperties settings;
  private final String adminToken;
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
  private Counter slotsMoved;
  private Counter bytesMoved;
  private Counter committed;
  private Counter rolledBack;
  private Timer stall;

  public PlacementCoordinator(
      Coordinator coordinator,
      MasterElection election,
      ChannelFactory channels,
      ScalingProperties settings,
      String adminToken) {
    this.coordinator = coordinator;
    this.store = new PlacementStore(coordinator);
    this.election = election;
    this.channels = channels;
    this.settings = settings;
    this.adminToken = adminToken;
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
    slotsMoved =
        Counter.builder("paramserver.master.scaling.slots.moved")
            .description("Row slots moved between pservers by committed moves")
            .register(registry);
    bytesMoved =
        Counter.builder("paramserver.master.scaling.bytes.moved")
            .description("Bytes (copies and records) sent by committed moves")
            .baseUnit("bytes")
            .register(registry);
    committed =
        Counter.builder("paramserver.master.scaling.moves")
            .tag("result", "committed")
            .description("Slot moves, by how they ended")
            .register(registry);
    rolledBack =
        Counter.builder("paramserver.master.scaling.moves")
            .tag("result", "rolled_back")
            .description("Slot moves, by how they ended")
            .register(registry);
    stall =
        Timer.builder("paramserver.master.scaling.stall")
            .description(
                "Per move: from the old owner refusing the slots to the new owner holding them")
            .publishPercentiles(0.5, 0.99)
            .register(registry);
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
      SlotMap initial = initialMap(desired);
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
      checkServers(now);
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
    int desired = desired();
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
      desired =
          coordinator
              .kv()
              .get(coordinator.keys().psDesired())
              .map(kv -> Integer.parseInt(kv.valueAsString().trim()))
              .orElse(null);
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
    int desired = desired();
    SlotMap cur = SlotMap.fromProto(read.map().get());
    SlotMap target = cur.resized(desired);
    List<SlotMove> moves = cur.movesTo(target, settings.slotsPerMove());
    if (moves.isEmpty()) {
      finishShrink(desired);
      return Step.DONE;
    }
    for (int i = 0; i < desired; i++) {
      awaitRegistered(i);
    }
    try {
      checkServers(desired);
    } catch (StatusRuntimeException e) {
      if (!RpcErrors.isTransient(e)) {
        throw e;
      }
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
      MoveOutResponse answer = moveOut(move);
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
      if (slotsMoved != null) {
        slotsMoved.increment(move.getSlotsCount());
        bytesMoved.increment(answer.getBytes());
        committed.increment();
        stall.record(Duration.ofMillis(answer.getStallMs()));
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
      if (rolledBack != null) {
        rolledBack.increment();
      }
      remember(ScalingStatus.move(move, "rolled back: " + why, null, null), why);
      return false;
    }
  }

  private MoveOutResponse moveOut(SlotMove move) {
    String address = address(move.getFrom());
    ManagedChannel channel = channels.forAddress(address);
    try {
      return SlotMovesGrpc.newBlockingStub(channel)
          .withDeadlineAfter(settings.moveTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .moveOut(move);
    } finally {
      channel.shutdownNow();
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

  private int desired() {
    return coordinator
        .kv()
        .get(coordinator.keys().psDesired())
        .map(kv -> Integer.parseInt(kv.valueAsString().trim()))
        .orElseThrow(() -> new IllegalStateException("ps_desired is not set"));
  }

  private String address(int index) {
    return coordinator
        .kv()
        .get(coordinator.keys().ps(index))
        .map(KeyValueStore.KeyValue::valueAsString)
        .orElseThrow(() -> new IllegalStateException("pserver " + index + " is not registered"));
  }

  private void awaitRegistered(int index) {
    long deadline = System.nanoTime() + settings.registrationTimeout().toNanos();
    boolean registered =
        poll()
            .until(
                "waiting for pserver " + index + " to register",
                attempt -> {
                  if (coordinator.kv().get(coordinator.keys().ps(index)).isPresent()) {
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

  /** Looks every poll-interval until this master closes or stops leading. */
  private Retry poll() {
    return new Retry(
        settings.pollInterval(), settings.pollInterval(), () -> closed || !election.isLeader());
  }

  private ShardStatus status(int index) {
    ManagedChannel channel = channels.forAddress(address(index));
    try {
      return ParameterServerGrpc.newBlockingStub(channel)
          .withDeadlineAfter(10, TimeUnit.SECONDS)
          .getShardStatus(GetShardStatusRequest.getDefaultInstance());
    } finally {
      channel.shutdownNow();
    }
  }

  /** Refuses to scale a job that is not asynchronous or runs replicas. */
  private void checkServers(int n) {
    for (int i = 0; i < n; i++) {
      if (coordinator.kv().get(coordinator.keys().ps(i)).isEmpty()) {
        continue; // a new index, not registered yet: nothing to check
      }
      refuseUnscalable(i, status(i));
    }
  }

  /** Refuses a pserver that runs a replica, or an initialised one not in asynchronous mode. */
  private static void refuseUnscalable(int index, ShardStatus s) {
    if (s.getReplicaRole() != ReplicaRole.REPLICA_NONE) {
      throw new IllegalStateException(
          "pserver " + index + " runs with a replica: scaling with replicas is not supported yet");
    }
    if (s.getInitialised() && s.getMode() != TrainingMode.ASYNC) {
      throw new IllegalStateException(
          "the job trains in " + s.getMode() + " mode: only asynchronous jobs can be scaled live");
    }
  }

  /**
   * The initial map of the job's {@code n} pservers, with the dense blocks where they are: every
   * pserver must be registered and initialised (the blocks are known only then).
   */
  private SlotMap initialMap(int n) {
    List<BlockSpec> dense = new ArrayList<>();
    Map<String, Integer> owners = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      if (coordinator.kv().get(coordinator.keys().ps(i)).isEmpty()) {
        throw new IllegalStateException(
            "pserver " + i + " of " + n + " is not registered: scale once every pserver runs");
      }
      ShardStatus s = status(i);
      if (!s.getInitialised()) {
        throw new IllegalStateException(
            "pserver "
                + i
                + " is not initialised yet: scale once training has started (the parameters"
                + " are placed then)");
      }
      refuseUnscalable(i, s);
      for (int b = 0; b < s.getBlockRefsCount(); b++) {
        var ref = s.getBlockRefs(b);
        long bytes = b < s.getBlockBytesCount() ? s.getBlockBytes(b) : 0;
        dense.add(new BlockSpec(ref.getName(), ref.getBlock(), 0, (int) (bytes / 4)));
        owners.put(ref.getName() + "#" + ref.getBlock(), i);
      }
    }
    SlotMap initial = SlotMap.initial(dense, n);
    for (BlockSpec b : dense) {
      int where = owners.get(b.id());
      if (initial.ownerOfBlock(b.name(), b.block()) != where) {
        throw new IllegalStateException(
            "block "
                + b.id()
                + " is on pserver "
                + where
                + ", not where the placement rule puts it: the job's blocks are not placed by the"
                + " rule the trainers use");
      }
    }
    return initial;
  }

  /**
   * After a shrink: shuts down the registered pservers at or above {@code n}, once they have
   * drained ({@link ScalingProperties#drainTime}): a trainer may still send one a request planned
   * by a map older than the last commit, or resend a push whose answer it lost; the pserver answers
   * MOVED (nothing applied) or that it is a duplicate. Once it is gone, such a request goes by the
   * committed map (docs/explanation/elastic.md).
   */
  private void finishShrink(int n) throws InterruptedException {
    String prefix = coordinator.keys().psPrefix();
    Map<Integer, String> emptied = new TreeMap<>();
    for (KeyValueStore.KeyValue kv : coordinator.kv().getPrefix(prefix)) {
      try {
        int index = Integer.parseInt(kv.key().substring(prefix.length()));
        if (index >= n) {
          emptied.put(index, kv.key());
        }
      } catch (NumberFormatException e) {
        // not a pserver registration
      }
    }
    if (emptied.isEmpty()) {
      return;
    }
    String names = emptied.keySet().stream().map(String::valueOf).collect(Collectors.joining(", "));
    setPhase(ScalingPhase.DRAINING, names, null);
    log.info(
        "placement: pserver {} owns nothing now: it answers MOVED for {}, then it is shut down",
        names,
        settings.drainTime());
    long drained = System.nanoTime() + settings.drainTime().toNanos();
    poll()
        .until(
            "draining pserver " + names,
            attempt -> System.nanoTime() >= drained ? Optional.of(true) : Optional.empty());
    for (Map.Entry<Integer, String> e : emptied.entrySet()) {
      int index = e.getKey();
      String adminAddress = status(index).getAdminAddress();
      if (adminAddress.isEmpty()) {
        throw new IllegalStateException(
            "pserver " + index + " has no admin address: stop it yourself, it owns nothing now");
      }
      log.info("placement: asking pserver {} to shut down", index);
      try {
        AdminClient.create(
                "pserver " + index, baseUrl(adminAddress), adminToken, Duration.ofSeconds(30))
            .shutdown();
      } catch (java.io.IOException ex) {
        throw new IllegalStateException(
            "pserver " + index + " did not take the shutdown: " + ex.getMessage(), ex);
      }
      long deadline = System.nanoTime() + settings.shutdownTimeout().toNanos();
      poll()
          .until(
              "waiting for pserver " + index + " to deregister",
              attempt ->
                  coordinator.kv().get(e.getValue()).isEmpty() || System.nanoTime() >= deadline
                      ? Optional.of(true)
                      : Optional.empty());
      coordinator.kv().delete(coordinator.keys().checkpoint(index));
      log.info("placement: pserver {} is gone", index);
    }
  }

  private static String baseUrl(String adminAddress) {
    return adminAddress.startsWith("http") ? adminAddress : "http://" + adminAddress;
  }

  @Override
  public void close() {
    closed = true;
    ticker.shutdownNow();
    worker.shutdownNow();
  }
}
