package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.MoveOutResponse;
import dev.paramserver.proto.v1.SlotMove;
import dev.paramserver.proto.v1.SlotMovesGrpc;
import dev.paramserver.pserver.replication.ReplicationClock;
import dev.paramserver.tensor.SlotMap;
import io.grpc.ManagedChannel;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;

/**
 * The coordinator of the move simulation: the leader master's {@code PlacementCoordinator}
 * (master-service, which pserver-service cannot depend on) reproduced step by step and small, on
 * the scheduler's node {@value #NODE}, one step per task instead of a blocking loop. Each step
 * reads the placement from etcd: a move left in progress (by a failed step of its own) is rolled
 * back (a fenced delete); the moves from the committed map to the map of {@code desired} pservers
 * ({@code SlotMap.resized}, {@code movesTo}, {@code slotsPerMove} slots each) are planned; it waits
 * (every poll interval) until every index below {@code desired} is registered; the first move is
 * begun in etcd (fenced, epoch = committed + 1, a new random {@code attempt} drawn from the seed,
 * so a retry after a rollback is another attempt); {@code MoveOut} goes to the old owner over gRPC
 * with the move timeout as its deadline; on its answer the map of the move's epoch is committed if
 * etcd's move is still this one, else (an error, a timeout, the move gone) the move is rolled back
 * if it is still in etcd, and the step is planned again after the retry delay. Not reproduced: the
 * status checks of the pservers before a move ({@code checkServers}), the scaling phase and history
 * the console shows, and a shrink's drain.
 */
final class MoveDriver {
  static final String NODE = "master";

  private final SimulationScheduler sim;
  private final PlacementStore store;
  private final InMemoryCoordinator etcd;
  private final MoveLinks.From links;
  private final ReplicationClock clock;
  private final SimulationExecutor calls;
  private final SimulationExecutor timer;
  private final Random random;
  private final int slotsPerMove;
  private final Duration moveTimeout;
  private final long retryDelay;
  private final long pollInterval;
  private final List<String> log = new ArrayList<>();
  // the injected defect: commit a move right after beginning it (see MoveSettings)
  private boolean commitWithoutMoveOut;
  private int desired;
  // the scalings asked for after the current one, in order
  private final java.util.ArrayDeque<Integer> then = new java.util.ArrayDeque<>();
  // false until every scaling asked for is done
  private boolean done;
  private int committed;
  private int rolledBack;
  private int begun;
  private long forwarded;
  private java.util.function.BiConsumer<Integer, SlotMove> onBegin = (n, m) -> {};

  MoveDriver(
      SimulationScheduler sim,
      InMemoryCoordinator etcd,
      MoveLinks.From links,
      long seed,
      int slotsPerMove,
      Duration moveTimeout,
      Duration retryDelay,
      Duration pollInterval) {
    this.sim = sim;
    this.etcd = etcd;
    this.store = new PlacementStore(etcd);
    this.links = links;
    this.clock = sim.clock(NODE);
    this.calls = new SimulationExecutor(sim, NODE, false);
    this.timer = new SimulationExecutor(sim, NODE, true);
    this.random = new Random(seed);
    this.slotsPerMove = slotsPerMove;
    this.moveTimeout = moveTimeout;
    this.retryDelay = retryDelay.toNanos();
    this.pollInterval = pollInterval.toNanos();
  }

  /** Calls {@code listener} with the number (1, 2...) of each move attempt it begins in etcd. */
  void onBegin(java.util.function.BiConsumer<Integer, SlotMove> listener) {
    this.onBegin = listener;
  }

  /** Injects the defect: each move is committed as soon as it is begun, with no MoveOut. */
  void commitWithoutMoveOut() {
    commitWithoutMoveOut = true;
  }

  /**
   * Makes the committed placement one of {@code pservers} pservers, from now on, then of each of
   * {@code after} in turn (writing {@code ps_desired} first, as {@code psctl scale} does).
   */
  void scaleTo(int pservers, int... after) {
    for (int n : after) {
      then.add(n);
    }
    desired = pservers;
    done = false;
    sim.submit(NODE, this::step);
  }

  /** Whether the committed map is the last one asked for, with no move in progress. */
  boolean done() {
    return done;
  }

  int committed() {
    return committed;
  }

  int rolledBack() {
    return rolledBack;
  }

  /** Records the old owners forwarded after their cut, in the moves committed. */
  long forwarded() {
    return forwarded;
  }

  /** What it did, one line per move attempt. */
  List<String> log() {
    return List.copyOf(log);
  }

  private void note(String what) {
    log.add(String.format(Locale.ROOT, "%8.3f s %s", sim.now() / 1e9, what));
  }

  private void later(long nanos) {
    sim.schedule(NODE, nanos, this::step);
  }

  /** One step towards {@code desired} pservers (the coordinator's reconcileOnce). */
  private void step() {
    PlacementStore.Read read = store.read();
    if (read.move().isPresent()) {
      SlotMove left = read.move().get();
      note("rolls back " + left.getId() + " (attempt " + left.getAttempt() + ") left unfinished");
      store.abort(read);
      sim.submit(NODE, this::step);
      return;
    }
    SlotMap cur = SlotMap.fromProto(read.map().orElseThrow());
    List<SlotMove> moves = cur.movesTo(cur.resized(desired), slotsPerMove);
    if (moves.isEmpty()) {
      note("done with " + desired + " pservers at epoch " + cur.epoch());
      if (then.isEmpty()) {
        done = true;
        return;
      }
      desired = then.poll();
      etcd.kv()
          .put(
              etcd.keys().psDesired(),
              Integer.toString(desired).getBytes(java.nio.charset.StandardCharsets.UTF_8));
      note("scales to " + desired + " pservers");
      sim.submit(NODE, this::step);
      return;
    }
    for (int i = 0; i < desired; i++) {
      if (address(i).isEmpty()) {
        later(pollInterval);
        return;
      }
    }
    SlotMove move =
        moves.get(0).toBuilder()
            .setEpoch(cur.epoch() + 1)
            .setId(
                "e"
                    + (cur.epoch() + 1)
                    + "-"
                    + moves.get(0).getFrom()
                    + "to"
                    + moves.get(0).getTo())
            .setAttempt(1 + (random.nextLong() & (Long.MAX_VALUE - 1)))
            .build();
    if (!store.begin(read, move)) {
      later(retryDelay);
      return;
    }
    onBegin.accept(++begun, move);
    if (commitWithoutMoveOut) {
      commit(cur, move, MoveOutResponse.getDefaultInstance());
      return;
    }
    Optional<String> address = address(move.getFrom());
    if (address.isEmpty()) {
      failed(move, "pserver " + move.getFrom() + " is not registered");
      return;
    }
    note(
        "begins "
            + move.getId()
            + " (attempt "
            + move.getAttempt()
            + "): "
            + move.getSlotsCount()
            + " slots, blocks "
            + move.getBlocksList().stream().map(b -> b.getName() + "/" + b.getBlock()).toList()
            + ", MoveOut to pserver "
            + move.getFrom());
    ManagedChannel channel =
        InProcessChannelBuilder.forName(address.get())
            .intercept(links.to(address.get()))
            .executor(calls)
            .scheduledExecutorService(timer)
            .build();
    SlotMovesGrpc.newStub(channel)
        .withDeadline(clock.deadlineAfter(moveTimeout.toNanos()))
        .moveOut(
            move,
            new StreamObserver<>() {
              private boolean answered;

              @Override
              public void onNext(MoveOutResponse value) {
                answered = true;
                channel.shutdownNow();
                commit(cur, move, value);
              }

              @Override
              public void onError(Throwable t) {
                channel.shutdownNow();
                failed(move, "MoveOut failed: " + t.getMessage());
              }

              @Override
              public void onCompleted() {
                if (!answered) {
                  channel.shutdownNow();
                  failed(move, "MoveOut ended without an answer");
                }
              }
            });
  }

  private void commit(SlotMap cur, SlotMove move, MoveOutResponse answer) {
    PlacementStore.Read moving = store.read();
    if (!moving.move().equals(Optional.of(move))
        || !store.commit(moving, cur.with(move).toProto())) {
      failed(move, "rolled back in etcd before its commit (by the old owner's timeout?)");
      return;
    }
    committed++;
    forwarded += answer.getRecords();
    note(
        "commits "
            + move.getId()
            + " (attempt "
            + move.getAttempt()
            + "): "
            + answer.getRows()
            + " rows, "
            + answer.getBlocks()
            + " blocks, "
            + answer.getRecords()
            + " records");
    sim.submit(NODE, this::step);
  }

  private void failed(SlotMove move, String why) {
    PlacementStore.Read after = store.read();
    if (after.move().equals(Optional.of(move))) {
      store.abort(after);
    }
    rolledBack++;
    note("rolls back " + move.getId() + " (attempt " + move.getAttempt() + "): " + why);
    later(retryDelay);
  }

  /** The address registered at {@code ps/<index>}, if any. */
  private Optional<String> address(int index) {
    return etcd.kv().get(etcd.keys().ps(index)).map(KeyValueStore.KeyValue::valueAsString);
  }
}
