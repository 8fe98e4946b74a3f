package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.proto.v1.ShardCheckpoint;
import dev.paramserver.pserver.replication.harness.MoveHistory.Event;
import dev.paramserver.tensor.SlotMap;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * One deterministic run of slot moves (docs/explanation/elastic.md): three real elastic pservers
 * ({@link MovePserver}: the real ShardMoves, PlacementFollower, MoveRequests, OutgoingMove,
 * IncomingMove, the SlotMoves gRPC service over the in-process transport, the write-ahead log and
 * checkpoints), a coordinator growing the job from two pservers to three, then shrinking it back to
 * two, one fenced move at a time ({@link MoveDriver}), and trainers pushing identified updates by
 * the committed map ({@link MoveTrainers}), all on the threads and simulated clock of one {@link
 * SimulationScheduler}, etcd in memory. A nemesis drawn from the same seed strikes the old or the
 * new owner of the move under way (or any pserver between moves): a partition both ways or one way
 * ({@link MoveLinks}), a pause (past its lease or not), a crash (disk kept) and its restart on the
 * same disk, or the loss of the coordinator's replies (a MoveOut answered but its answer lost).
 * Then every fault heals, the scaling must end (committed, balanced, nothing in progress, every
 * pserver serving the committed epoch), and {@link MoveState} checks every acknowledged push
 * applied exactly once across the owners.
 */
final class MoveSimulation implements AutoCloseable {
  static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  // the pserver's move-timeout (as the test properties set it) and the coordinator's
  static final Duration MOVE_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration MASTER_MOVE_TIMEOUT = Duration.ofSeconds(30);
  private static final int SLOTS_PER_MOVE = 2048;

  private final long seed;
  private final MoveSettings settings;
  private final Random random;
  private final SimulationScheduler sim;
  private final InMemoryCoordinator etcd;
  private final PlacementStore store;
  private final MoveHistory history;
  private final MoveLinks links = new MoveLinks();
  private final SlotMap initial;
  private final MoveTrainers trainers;
  private final MoveDriver driver;
  // the live (or crashed, not yet restarted) process of each index
  private final Map<Integer, MoveProcess> procs = new TreeMap<>();
  private final List<MovePserver> all = new ArrayList<>();
  private final MoveNemesis nemesis;
  private int restarts;

  MoveSimulation(long seed, MoveSettings settings) {
    this.seed = seed;
    this.settings = settings;
    this.random = new Random(seed);
    this.sim = new SimulationScheduler(seed ^ 0x5DEECE66DL);
    this.etcd = new InMemoryCoordinator(new SimulationExecutor(sim, "etcd", true));
    this.store = new PlacementStore(etcd);
    this.history = new MoveHistory(settings.trainers(), settings.maxPushes());
    this.initial = SlotMap.initial(history.blocks(), 2);
    this.driver =
        new MoveDriver(
            sim,
            etcd,
            links.from(MoveDriver.NODE, network(MoveDriver.NODE), random.nextLong(), sim),
            random.nextLong(),
            SLOTS_PER_MOVE,
            MASTER_MOVE_TIMEOUT,
            Duration.ofSeconds(2),
            Duration.ofMillis(500));
    this.trainers =
        new MoveTrainers(
            sim,
            history,
            store,
            initial,
            links,
            this::serving,
            random.nextLong(),
            () -> !driver.done(),
            settings);
    if (settings.commitWithoutMoveOut()) {
      driver.commitWithoutMoveOut();
    }
    this.nemesis =
        new MoveNemesis(sim, random.nextLong(), etcd, links, procs, this::register, this::restart);
  }

  private SimulationNetwork network(String node) {
    return new SimulationNetwork(
        sim, node, random.nextLong(), SECOND, settings.faultPercent(), this::listens);
  }

  private MoveProcess start(int index, String node, MovePserver restartOf) {
    InProcessPserver.Wiring wiring =
        new InProcessPserver.Wiring(
            sim.clock(node),
            new SimulationExecutor(sim, node, true),
            new SimulationExecutor(sim, node, false),
            new SimulationExecutor(sim, node, false),
            new SimulationExecutor(sim, node, false));
    MoveLinks.From from = links.from(node, network(node), random.nextLong(), sim);
    MovePserver p =
        restartOf == null
            ? new MovePserver(node, index, etcd, from, wiring, disk(node), MOVE_TIMEOUT)
            : restartOf.restartOnSameDisk(node, from, wiring, MOVE_TIMEOUT);
    all.add(p);
    MoveProcess proc = new MoveProcess(index, node, p);
    procs.put(index, proc);
    return proc;
  }

  /** A pserver's disk: in memory (tmpfs) where the machine has one, as the replication's. */
  private static Path disk(String name) {
    Path shm = Path.of("/dev/shm");
    if (Files.isDirectory(shm) && Files.isWritable(shm)) {
      try {
        return Files.createTempDirectory(shm, "paramserver-movesim-" + name + "-");
      } catch (IOException e) {
        // the default temp directory then
      }
    }
    return TempDirs.create("movesim-" + name);
  }

  /** Runs the schedule drawn from the seed and checks the final state. */
  MoveResult run() {
    KeyValueStore kv = etcd.kv();
    kv.put(etcd.keys().placement(), initial.toProto().toByteArray());
    kv.put(etcd.keys().psDesired(), "3".getBytes(StandardCharsets.UTF_8));
    for (int i = 0; i < 3; i++) {
      MoveProcess p = start(i, "ps" + i, null);
      sim.submit(
          p.node,
          () -> {
            if (!p.pserver.register(p.index < 2 ? 2 : 3)) {
              throw new IllegalStateException("ps/" + p.index + " is taken at the start");
            }
            if (p.index < 2) {
              history.initialise(p.pserver.shard, initial, p.index);
            }
          });
    }
    trainers.start(SECOND / 10);
    sim.schedule(
        MoveDriver.NODE,
        SECOND / 5 + (long) (random.nextDouble() * SECOND),
        () -> {
          if (settings.shrinkBack()) {
            driver.scaleTo(3, 2);
          } else {
            driver.scaleTo(3);
          }
        });
    for (int i = 0; i < settings.faults(); i++) {
      nemesis.planFault();
    }
    driver.onBegin(nemesis::moveBegun);
    long horizon = 120 * SECOND;
    sim.runUntil(() -> trainers.done() && driver.done(), horizon);
    sim.submit("nemesis", nemesis::healAll);
    boolean settled = sim.runUntil(this::settled, sim.now() + 120 * SECOND);
    List<String> extra = new ArrayList<>();
    sim.leaks().forEach(l -> extra.add("LEAK: " + l));
    MoveHistory.Verdict verdict;
    if (!settled) {
      extra.add(
          "the scaling did not end within 120 simulated s after the faults healed: " + world());
      verdict = new MoveHistory.Verdict(0, 0, 0, extra);
    } else {
      SlotMap map = store.read().slotMap(initial);
      Map<Integer, ShardCheckpoint> states = new TreeMap<>();
      procs.forEach((i, p) -> states.put(i, p.pserver.shard.snapshot()));
      verdict = history.check(map, states);
      List<String> v = new ArrayList<>(verdict.violations());
      v.addAll(MoveState.ownership(history, map, states, settings.finalPservers()));
      v.addAll(extra);
      verdict =
          new MoveHistory.Verdict(verdict.acknowledged(), verdict.lost(), verdict.doubled(), v);
    }
    for (Event e : history.events()) {
      sim.record(e.toString().hashCode(), "event " + e);
    }
    return new MoveResult(
        seed,
        verdict,
        sim.traceHash(),
        sim.steps(),
        nemesis.described(),
        driver.log(),
        new MoveResult.Counts(driver.committed(), driver.rolledBack(), driver.forwarded()),
        history.events(),
        sim.traceLines());
  }

  /** Keeps the run's trace in words, to tell where two runs of the seed part; before run. */
  MoveSimulation keepTrace() {
    sim.keepTrace();
    return this;
  }

  /**
   * The scaling ended and every pserver follows it: the trainers are done, the coordinator is done
   * (no move in progress), and every index is held by a live pserver serving the committed epoch
   * with no move under way.
   */
  private boolean settled() {
    if (!trainers.done() || !driver.done()) {
      return false;
    }
    PlacementStore.Read read = store.read();
    if (read.move().isPresent()) {
      return false;
    }
    for (int i = 0; i < 3; i++) {
      Optional<MoveTrainers.Target> t = serving(i);
      if (t.isEmpty()) {
        return false;
      }
      var f = t.get().pserver().follower;
      if (f.map() == null
          || f.map().epoch() != read.epoch()
          || f.outgoing() != null
          || f.incoming() != null) {
        return false;
      }
    }
    return true;
  }

  /** The pservers and etcd's keys, for a failure's report. */
  private String world() {
    StringBuilder s = new StringBuilder();
    s.append("trainers ").append(trainers.done() ? "done" : "not done");
    s.append(", coordinator ").append(driver.done() ? "done" : "not done").append("; ");
    for (MoveProcess p : procs.values()) {
      var f = p.pserver.follower;
      s.append(p.node)
          .append(p.crashed ? " crashed" : p.paused ? " paused" : "")
          .append(" role ")
          .append(p.pserver.lifecycle.role())
          .append(" epoch ")
          .append(f.map() == null ? "-" : Long.toString(f.map().epoch()))
          .append(f.outgoing() != null ? " out " + f.outgoing() : "")
          .append(f.incoming() != null ? " in " + f.incoming() : "")
          .append("; ");
    }
    for (KeyValueStore.KeyValue kv : etcd.kv().getPrefix(etcd.keys().prefix())) {
      if (!kv.key().startsWith(etcd.keys().placement())) {
        s.append(kv.key()).append('=').append(kv.valueAsString()).append("; ");
      }
    }
    s.append("placement move ").append(store.read().move().map(m -> m.getId()).orElse("none"));
    return s.toString();
  }

  /** Whether a live pserver has {@code address}. */
  private boolean listens(String address) {
    return procs.values().stream().anyMatch(p -> !p.crashed && p.pserver.address.equals(address));
  }

  /** The live process holding {@code ps/<index>}, if any. */
  private Optional<MoveTrainers.Target> serving(int index) {
    MoveProcess p = procs.get(index);
    if (p == null || p.crashed || !p.pserver.holds(index)) {
      return Optional.empty();
    }
    return Optional.of(new MoveTrainers.Target(p.node, p.pserver));
  }

  /** Registers (again) as the registration does; while the index is held, tries again later. */
  private void register(MoveProcess p) {
    if (p.crashed || procs.get(p.index) != p) {
      return;
    }
    boolean claimed;
    try {
      claimed = p.pserver.register(3);
    } catch (RuntimeException e) {
      claimed = false;
    }
    if (!claimed) {
      sim.schedule(p.node, SECOND / 2, () -> register(p));
    }
  }

  /** A crashed process starts again on its disk and claims its index. */
  private void restart(MoveProcess old) {
    if (!old.crashed || procs.get(old.index) != old) {
      return;
    }
    MoveProcess p = start(old.index, "ps" + old.index + "'" + (++restarts), old.pserver);
    sim.submit(p.node, () -> register(p));
  }

  @Override
  public void close() {
    sim.close();
    for (MovePserver p : all) {
      try {
        p.close();
      } catch (RuntimeException e) {
        // best effort: the next one must still be closed
      }
    }
    etcd.close();
  }
}
