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
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * One deterministic run of slot moves (docs/explanation/elastic.md): three real elastic pservers
 * ({@link MovePserver}: the real ShardMoves, PlacementFollower, MoveRequests, OutgoingMove,
 * IncomingMove, the SlotMoves gRPC service over the in-process transport, the write-ahead log and
 * checkpoints), a coordinator growing the job from two pservers to three one fenced move at a time
 * ({@link MoveDriver}), and trainers pushing identified updates by the committed map ({@link
 * MoveTrainers}), all on the threads and simulated clock of one {@link SimulationScheduler}, etcd
 * in memory. A nemesis drawn from the same seed strikes the old or the new owner of the move under
 * way (or any pserver between moves): a partition both ways or one way ({@link MoveLinks}), a pause
 * (past its lease or not), a crash (disk kept) and its restart on the same disk, or the loss of the
 * coordinator's replies (a MoveOut answered but its answer lost). Then every fault heals, the grow
 * must end (committed, balanced, nothing in progress, every pserver serving the committed epoch),
 * and {@link MoveState} checks every acknowledged push applied exactly once across the owners.
 */
final class MoveSimulation implements AutoCloseable {
  static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  private static final long LEASE_TTL = 3 * SECOND;
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
  private final Map<Integer, Proc> procs = new TreeMap<>();
  private final List<MovePserver> all = new ArrayList<>();
  private final List<String> nemesis = new ArrayList<>();
  // faults armed for a move attempt (by its number): they strike its old or new owner
  private final List<Armed> armed = new ArrayList<>();
  private int restarts;

  /** A fault that strikes {@code delay} after the coordinator begins move attempt {@code n}. */
  private record Armed(int n, long delay, MoveFault kind, boolean oldOwner, long lasts) {}

  /** A pserver process: its node, its pserver, paused or crashed. */
  private static final class Proc {
    final int index;
    final String node;
    final MovePserver pserver;
    boolean paused;
    boolean crashed;
    boolean leaseExpired;
    SimulationScheduler.Timer expiry;

    Proc(int index, String node, MovePserver pserver) {
      this.index = index;
      this.node = node;
      this.pserver = pserver;
    }
  }

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
  }

  private SimulationNetwork network(String node) {
    return new SimulationNetwork(
        sim, node, random.nextLong(), SECOND, settings.faultPercent(), this::listens);
  }

  private Proc start(int index, String node, MovePserver restartOf) {
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
    Proc proc = new Proc(index, node, p);
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
      Proc p = start(i, "ps" + i, null);
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
        () -> driver.scaleTo(3));
    for (int i = 0; i < settings.faults(); i++) {
      planFault();
    }
    driver.onBegin(
        (n, move) -> {
          for (Armed a : armed) {
            if (a.n() == n) {
              int index = a.oldOwner() ? move.getFrom() : move.getTo();
              sim.schedule("nemesis", a.delay(), () -> inject(a.kind(), index, a.lasts()));
            }
          }
        });
    long horizon = 120 * SECOND;
    sim.runUntil(() -> trainers.done() && driver.done(), horizon);
    sim.submit("nemesis", this::healAll);
    boolean settled = sim.runUntil(this::settled, sim.now() + 120 * SECOND);
    List<String> extra = new ArrayList<>();
    sim.leaks().forEach(l -> extra.add("LEAK: " + l));
    MoveHistory.Verdict verdict;
    if (!settled) {
      extra.add("the grow did not end within 120 simulated s after the faults healed: " + world());
      verdict = new MoveHistory.Verdict(0, 0, 0, extra);
    } else {
      SlotMap map = store.read().slotMap(initial);
      Map<Integer, ShardCheckpoint> states = new TreeMap<>();
      procs.forEach((i, p) -> states.put(i, p.pserver.shard.snapshot()));
      verdict = history.check(map, states);
      List<String> v = new ArrayList<>(verdict.violations());
      v.addAll(MoveState.ownership(history, map, states));
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
        nemesis,
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
   * The grow ended and every pserver follows it: the trainers are done, the coordinator is done (no
   * move in progress), and every index is held by a live pserver serving the committed epoch with
   * no move under way.
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
    for (Proc p : procs.values()) {
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
    Proc p = procs.get(index);
    if (p == null || p.crashed || !p.pserver.holds(index)) {
      return Optional.empty();
    }
    return Optional.of(new MoveTrainers.Target(p.node, p.pserver));
  }

  /** Registers (again) as the registration does; while the index is held, tries again later. */
  private void register(Proc p) {
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

  /**
   * Draws one fault: what, to whom (the old or the new owner of a move), how long, and when: at a
   * time of the run (in the first 6 s), or (half of them) within 5 ms of the coordinator beginning
   * one of its first five move attempts, so that it strikes while that move runs.
   */
  private void planFault() {
    long at = SECOND / 5 + (long) (random.nextDouble() * 6 * SECOND);
    long lasts = SECOND / 5 + (long) (random.nextDouble() * 5 * SECOND);
    MoveFault kind = MoveFault.values()[random.nextInt(MoveFault.values().length)];
    boolean oldOwner = random.nextBoolean();
    int fallback = random.nextInt(3);
    boolean duringMove = random.nextBoolean();
    int n = 1 + random.nextInt(5);
    long delay = TimeUnit.MICROSECONDS.toNanos(random.nextInt(5000));
    String what = kind.name().toLowerCase(Locale.ROOT) + " of the " + (oldOwner ? "old" : "new");
    if (duringMove) {
      nemesis.add(
          String.format(
              Locale.ROOT,
              "%s owner %.3f ms after move attempt %d begins, for %.2f s",
              what,
              delay / 1e6,
              n,
              lasts / 1e9));
      armed.add(new Armed(n, delay, kind, oldOwner, lasts));
      return;
    }
    nemesis.add(
        String.format(
            Locale.ROOT,
            "%s owner (or of ps/%d between moves) at %.2f s for %.2f s",
            what,
            fallback,
            at / 1e9,
            lasts / 1e9));
    sim.schedule(
        "nemesis",
        at,
        () ->
            inject(
                kind,
                store.read().move().map(m -> oldOwner ? m.getFrom() : m.getTo()).orElse(fallback),
                lasts));
  }

  private void inject(MoveFault kind, int index, long lasts) {
    if (kind == MoveFault.LOST_MOVE_OUT_REPLY) {
      links.loseReplies(MoveDriver.NODE);
      sim.schedule("nemesis", lasts, () -> links.heal(MoveDriver.NODE));
      return;
    }
    Proc p = procs.get(index);
    if (p == null || p.crashed || p.paused) {
      return;
    }
    switch (kind) {
      case PARTITION -> {
        links.partition(p.node);
        sim.schedule("nemesis", lasts, () -> links.heal(p.node));
      }
      case ONE_WAY -> {
        links.loseReplies(p.node);
        sim.schedule("nemesis", lasts, () -> links.heal(p.node));
      }
      case PAUSE -> pause(p, lasts);
      case CRASH -> {
        crash(p);
        sim.schedule("nemesis", LEASE_TTL + lasts, () -> restart(p));
      }
      default -> {}
    }
  }

  private void pause(Proc p, long lasts) {
    p.paused = true;
    sim.pause(p.node);
    if (lasts > LEASE_TTL && p.pserver.lease() != null) {
      p.expiry =
          sim.schedule(
              "nemesis",
              LEASE_TTL,
              () -> {
                p.expiry = null;
                p.leaseExpired = true;
                etcd.expire(p.pserver.lease());
              });
    }
    sim.schedule("nemesis", lasts, () -> resume(p));
  }

  private void resume(Proc p) {
    if (!p.paused) {
      return;
    }
    p.paused = false;
    sim.resume(p.node);
    if (p.expiry != null) {
      p.expiry.cancelled = true; // resumed before etcd expired the lease: its keep-alive goes on
      p.expiry = null;
    }
    if (p.leaseExpired) {
      p.leaseExpired = false;
      // its keep-alive fails: the lease is lost, the shard stops answering, it claims again
      p.pserver.lease().revoke();
      sim.submit(
          p.node,
          () -> {
            p.pserver.leaseLost();
            sim.schedule(p.node, SECOND / 5, () -> register(p));
          });
    }
  }

  /** kill -9: the threads stop, the lease ends after its TTL, the disk stays. */
  private void crash(Proc p) {
    p.crashed = true;
    sim.crash(p.node);
    p.pserver.crashKeepingDisk();
    if (p.pserver.lease() != null) {
      sim.schedule("nemesis", LEASE_TTL, () -> etcd.expire(p.pserver.lease()));
    }
  }

  private void restart(Proc old) {
    if (!old.crashed || procs.get(old.index) != old) {
      return;
    }
    Proc p = start(old.index, "ps" + old.index + "'" + (++restarts), old.pserver);
    sim.submit(p.node, () -> register(p));
  }

  private void healAll() {
    links.healAll();
    for (Proc p : List.copyOf(procs.values())) {
      if (p.paused) {
        resume(p);
      }
      if (p.crashed) {
        restart(p);
      }
    }
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
