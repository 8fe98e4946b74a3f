package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.KeyValueStore;
import dev.paramserver.pserver.replication.harness.SimulationHistory.Event;
import dev.paramserver.pserver.role.ShardRole;
import dev.paramserver.testsupport.TempDirs;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * One deterministic run of a replicated shard (issue 42, item 8): a primary and its backup, each a
 * real pserver of the harness ({@link InProcessPserver}: the real Replication, PrimaryReplicator,
 * BackupReplica, Takeover, ShardLifecycle, PushPath and write-ahead log), on the threads and
 * simulated clock of one {@link SimulationScheduler}, their etcd in memory, their calls through a
 * {@link SimulationNetwork}. Trainers ({@link SimulatedTrainers}) push identified updates to
 * whoever holds {@code ps/0}, retrying a failed push; a nemesis drawn from the same seed partitions
 * links (both ways or one way), pauses pservers (past their lease or not), crashes them (disk kept)
 * and restarts them (after etcd expired the crashed process's lease, or sooner), overlapping at
 * will. Then every fault heals, and {@link SimulationHistory} checks the state of the pserver
 * serving the shard against every acknowledged push.
 */
final class Simulation implements AutoCloseable {
  static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final long LEASE_TTL = 3 * SECOND;

  private final long seed;
  private final SimulationSettings settings;
  private final Random random;
  // Whether each crash restarts before the lease's end (Restarts.DRAWN), apart from the run's other
  // draws: a seed's schedule is the same whichever restarts the settings ask for.
  private final Random restartDraws;
  private final SimulationScheduler sim;
  private final InMemoryCoordinator etcd;
  private final SimulationHistory history;
  private final Map<String, Node> nodes = new LinkedHashMap<>();
  private final List<String> nemesis = new ArrayList<>();
  private final List<InProcessPserver> all = new ArrayList<>();
  private final SimulatedTrainers trainers;
  private int restarts;

  /** A pserver process: its harness pserver, its outgoing network, paused or crashed. */
  private static final class Node {
    final String name;
    final InProcessPserver pserver;
    final SimulationNetwork network;
    boolean paused;
    boolean crashed;
    boolean leaseExpired;
    boolean registering;
    SimulationScheduler.Timer expiry;

    Node(String name, InProcessPserver pserver, SimulationNetwork network) {
      this.name = name;
      this.pserver = pserver;
      this.network = network;
    }
  }

  Simulation(long seed, SimulationSettings settings) {
    this.seed = seed;
    this.settings = settings;
    this.random = new Random(seed);
    this.restartDraws = new Random(~seed);
    this.sim = new SimulationScheduler(seed ^ 0x5DEECE66DL);
    this.etcd = new InMemoryCoordinator(new SimulationExecutor(sim, "etcd", true));
    this.history = new SimulationHistory(settings.trainers(), settings.pushes(), seed);
    this.trainers =
        new SimulatedTrainers(
            sim,
            history,
            random,
            settings,
            () -> serving().map(n -> new SimulatedTrainers.Target(n.name, n.pserver.shard)));
    if (settings.skipOutOfSync()) {
      etcd.skipOutOfSyncRecords();
    }
  }

  private Node start(String name, InProcessPserver restartOf) {
    SimulationNetwork network =
        new SimulationNetwork(
            sim,
            name,
            random.nextLong(),
            TIMEOUT.toNanos(),
            settings.faultPercent(),
            this::listens);
    InProcessPserver.Wiring wiring =
        new InProcessPserver.Wiring(
            sim.clock(name),
            new SimulationExecutor(sim, name, true),
            new SimulationExecutor(sim, name, false),
            new SimulationExecutor(sim, name, false),
            new SimulationExecutor(sim, name, false));
    InProcessPserver p =
        restartOf == null
            ? InProcessPserver.wired(name, etcd, network, TIMEOUT, wiring, disk(name))
            : restartOf.restartOnSameDisk(name, network, TIMEOUT, wiring);
    all.add(p);
    Node n = new Node(name, p, network);
    nodes.put(name, n);
    p.replication.onRoleLost(() -> roleLost(n));
    return n;
  }

  /**
   * A pserver's disk: in memory (tmpfs) where the machine has one, since the simulation's crashes
   * keep the disk and fsync costs it time without making it more faithful.
   */
  private static Path disk(String name) {
    Path shm = Path.of("/dev/shm");
    if (Files.isDirectory(shm) && Files.isWritable(shm)) {
      try {
        return Files.createTempDirectory(shm, "paramserver-simulation-" + name + "-");
      } catch (IOException e) {
        // the default temp directory then
      }
    }
    return TempDirs.create("simulation-" + name);
  }

  /**
   * As the registration does when the role ended or the lease was lost: the lease goes, it
   * registers again (once: a registration under way is not started twice).
   */
  private void roleLost(Node n) {
    if (n.registering) {
      return;
    }
    n.registering = true;
    if (n.pserver.lease() != null) {
      n.pserver.lease().revoke();
    }
    sim.schedule(n.name, SECOND / 5, () -> register(n));
  }

  /** Registers as ShardRegistration does; when both keys are held, tries again later. */
  private void register(Node n) {
    if (n.crashed) {
      return;
    }
    try {
      n.pserver.registerAsRegistrationDoes();
      n.registering = false;
    } catch (RuntimeException e) {
      // nothing free: the lease granted for the attempt goes, as the registration revokes it
      if (n.pserver.lease() != null) {
        n.pserver.lease().revoke();
      }
      sim.schedule(n.name, SECOND / 2, () -> register(n));
    }
  }

  /** Runs the schedule drawn from the seed and checks the final state. */
  SimulationResult run() {
    Node a = start("a", null);
    Node b = start("b", null);
    sim.submit(
        "a",
        () -> {
          a.pserver.registerAsPrimary();
          history.initialise(a.pserver.shard);
          a.pserver.checkpoints.checkpointNow();
          sim.submit("b", () -> b.pserver.registerAsBackup());
          trainers.start();
        });
    for (int i = 0; i < settings.faults(); i++) {
      planFault(i);
    }
    long horizon = 60 * SECOND;
    sim.runUntil(() -> trainers.done(), horizon);
    // the faults end: every pserver resumes, crashed ones restart on their disk, links heal
    sim.submit("nemesis", this::healAll);
    boolean served = sim.runUntil(this::settled, sim.now() + 60 * SECOND);
    List<String> extra = new ArrayList<>();
    if (!trainers.done()) {
      extra.add("trainers did not finish within " + horizon / SECOND + " simulated s");
    }
    sim.leaks().forEach(l -> extra.add("LEAK: " + l));
    Optional<Node> server = serving();
    SimulationHistory.Verdict verdict;
    if (!served || server.isEmpty()) {
      extra.add(
          "no pserver serves shard 0 with its backup in sync within 60 simulated s after the"
              + " faults healed: "
              + world());
      verdict = new SimulationHistory.Verdict(0, 0, 0, extra);
    } else {
      verdict = history.check(server.get().pserver.state());
      if (!extra.isEmpty()) {
        List<String> v = new ArrayList<>(verdict.violations());
        v.addAll(extra);
        verdict =
            new SimulationHistory.Verdict(
                verdict.acknowledged(), verdict.lost(), verdict.doubled(), v);
      }
    }
    for (Event e : history.events()) {
      sim.record(e.toString().hashCode(), "event " + e);
    }
    return new SimulationResult(
        seed, verdict, sim.traceHash(), sim.steps(), nemesis, history.events(), sim.traceLines());
  }

  /**
   * Keeps the run's trace in words ({@link SimulationResult#trace}), to tell where two runs of the
   * seed part; call before {@link #run}.
   */
  Simulation keepTrace() {
    sim.keepTrace();
    return this;
  }

  /** The pservers and etcd's keys, for a failure's report. */
  private String world() {
    StringBuilder s = new StringBuilder();
    for (Node n : nodes.values()) {
      s.append(n.name)
          .append(n.crashed ? " crashed" : n.paused ? " paused" : "")
          .append(" role ")
          .append(n.pserver.lifecycle.role())
          .append(n.pserver.replication.backupSynced() ? " backup synced" : "")
          .append("; ");
    }
    for (KeyValueStore.KeyValue kv : etcd.kv().getPrefix(etcd.keys().prefix())) {
      s.append(kv.key()).append('=').append(kv.valueAsString()).append("; ");
    }
    return s.toString();
  }

  /** Trainers are done and the shard's primary serves it with its backup in sync. */
  private boolean settled() {
    Optional<Node> s = serving();
    return trainers.done()
        && s.isPresent()
        && s.get().pserver.lifecycle.role() == ShardRole.PRIMARY
        && s.get().pserver.replication.backupSynced();
  }

  /** Whether a pserver that is not crashed has {@code address} (its name). */
  private boolean listens(String address) {
    return nodes.values().stream().anyMatch(n -> !n.crashed && n.pserver.name.equals(address));
  }

  /** The live pserver holding {@code ps/0}, if any. */
  private Optional<Node> serving() {
    Optional<KeyValueStore.KeyValue> kv = etcd.kv().get(etcd.keys().ps(InProcessPserver.INDEX));
    if (kv.isEmpty()) {
      return Optional.empty();
    }
    String address = kv.get().valueAsString();
    return nodes.values().stream()
        .filter(n -> !n.crashed && n.pserver.name.equals(address))
        .findFirst();
  }

  /** Draws fault {@code i}: what, to whom, when and for how long. */
  private void planFault(int i) {
    long at = SECOND / 5 + (long) (random.nextDouble() * 6 * SECOND);
    long lasts = SECOND / 5 + (long) (random.nextDouble() * 5 * SECOND);
    int kind = random.nextInt(5);
    boolean primary = random.nextBoolean();
    boolean quick =
        switch (settings.restarts()) {
          case AFTER_LEASE -> false;
          case WITHIN_LEASE -> true;
          case DRAWN -> restartDraws.nextBoolean();
        };
    String what =
        switch (kind) {
          case 0 -> "partition";
          case 1 -> "one-way";
          case 2 -> "pause";
          case 3 -> quick ? "crash (restart not waiting for the lease)" : "crash";
          default -> "none";
        };
    nemesis.add(
        String.format(
            "%s of the %s at %.2f s for %.2f s",
            what, primary ? "primary" : "backup", at / 1e9, lasts / 1e9));
    sim.schedule("nemesis", at, () -> inject(kind, primary, lasts, quick));
  }

  /**
   * @param quick a crashed pserver restarts when the fault's time is up, even before etcd expired
   *     its lease (as a supervisor or Kubernetes restarts a killed process within seconds); else
   *     only after the lease's end
   */
  private void inject(int kind, boolean primary, long lasts, boolean quick) {
    Optional<Node> p = serving();
    Node n =
        primary
            ? p.orElse(null)
            : nodes.values().stream()
                .filter(x -> !x.crashed && (p.isEmpty() || x != p.get()))
                .findFirst()
                .orElse(null);
    if (n == null || n.crashed || n.paused) {
      return;
    }
    switch (kind) {
      case 0 -> {
        n.network.partition();
        sim.schedule("nemesis", lasts, n.network::heal);
      }
      case 1 -> {
        n.network.loseReplies();
        sim.schedule("nemesis", lasts, n.network::heal);
      }
      case 2 -> pause(n, lasts);
      case 3 -> {
        crash(n);
        sim.schedule("nemesis", quick ? lasts : LEASE_TTL + lasts, () -> restart(n));
      }
      default -> {}
    }
  }

  private void pause(Node n, long lasts) {
    n.paused = true;
    sim.pause(n.name);
    if (lasts > LEASE_TTL && n.pserver.lease() != null) {
      n.expiry =
          sim.schedule(
              "nemesis",
              LEASE_TTL,
              () -> {
                n.expiry = null;
                n.leaseExpired = true;
                etcd.expire(n.pserver.lease());
              });
    }
    sim.schedule("nemesis", lasts, () -> resume(n));
  }

  private void resume(Node n) {
    if (!n.paused) {
      return;
    }
    n.paused = false;
    sim.resume(n.name);
    if (n.expiry != null) {
      // resumed before etcd expired the lease: its keep-alive goes on
      n.expiry.cancelled = true;
      n.expiry = null;
    }
    if (n.leaseExpired) {
      n.leaseExpired = false;
      // its keep-alive fails: the lease is lost, the role ends, it registers again
      n.pserver.lease().revoke();
      sim.submit(
          n.name,
          () -> {
            n.pserver.lifecycle.leaseLost(n.name + " lost its lease (simulation)");
            n.pserver.replication.stop();
            roleLost(n);
          });
    }
  }

  /** kill -9: the threads stop, the lease ends (its keys vanish), the disk stays. */
  private void crash(Node n) {
    n.crashed = true;
    sim.crash(n.name);
    n.pserver.crashKeepingDisk();
    if (n.pserver.lease() != null) {
      sim.schedule("nemesis", LEASE_TTL, () -> etcd.expire(n.pserver.lease()));
    }
  }

  private void restart(Node old) {
    if (!old.crashed || nodes.get(old.name) != old) {
      return;
    }
    nodes.remove(old.name);
    Node n = start(old.name + "'" + (++restarts), old.pserver);
    n.registering = true;
    sim.submit(n.name, () -> register(n));
  }

  private void healAll() {
    for (Node n : List.copyOf(nodes.values())) {
      n.network.heal();
      if (n.paused) {
        resume(n);
      }
      if (n.crashed) {
        restart(n);
      }
    }
  }

  @Override
  public void close() {
    sim.close();
    for (InProcessPserver p : all) {
      try {
        p.close();
      } catch (RuntimeException e) {
        // best effort: the next one must still be closed
      }
    }
    etcd.close();
  }
}
