package dev.paramserver.pserver.replication.harness;

import dev.paramserver.etcd.PlacementStore;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The move simulation's nemesis: faults drawn from the seed ({@link MoveFault}) that strike the old
 * or the new owner of a move, at a time of the run or armed for a move attempt of the coordinator,
 * as the replication simulation's nemesis strikes a primary or a backup: a partition both ways or
 * one way, a pause (past the lease TTL, etcd expires the lease and the pserver finds it lost when
 * it resumes, then claims its index again), a crash ({@code kill -9}: its threads never run again,
 * its lease expires after the TTL, its disk stays) and its restart on the same disk once the lease
 * expired, or the loss of the coordinator's replies.
 */
final class MoveNemesis {
  private static final long SECOND = MoveSimulation.SECOND;
  static final long LEASE_TTL = 3 * SECOND;

  private final SimulationScheduler sim;
  private final Random random;
  private final InMemoryCoordinator etcd;
  private final PlacementStore store;
  private final MoveLinks links;
  private final Map<Integer, MoveProcess> procs;
  private final Consumer<MoveProcess> register;
  private final Consumer<MoveProcess> restart;
  private final List<String> described = new ArrayList<>();
  // faults armed for a move attempt (by its number): they strike its old or new owner
  private final List<Armed> armed = new ArrayList<>();

  /** A fault that strikes {@code delay} after the coordinator begins move attempt {@code n}. */
  private record Armed(int n, long delay, MoveFault kind, boolean oldOwner, long lasts) {}

  /**
   * @param procs the live (or crashed, not yet restarted) process of each index
   * @param register claims the index again (a pserver that found its lease lost)
   * @param restart starts a crashed process again on its disk
   */
  MoveNemesis(
      SimulationScheduler sim,
      long seed,
      InMemoryCoordinator etcd,
      MoveLinks links,
      Map<Integer, MoveProcess> procs,
      Consumer<MoveProcess> register,
      Consumer<MoveProcess> restart) {
    this.sim = sim;
    this.random = new Random(seed);
    this.etcd = etcd;
    this.store = new PlacementStore(etcd);
    this.links = links;
    this.procs = procs;
    this.register = register;
    this.restart = restart;
  }

  /** The faults drawn, in words. */
  List<String> described() {
    return List.copyOf(described);
  }

  /** Strikes the faults armed for move attempt {@code n} of {@code move}. */
  void moveBegun(int n, dev.paramserver.proto.v1.SlotMove move) {
    for (Armed a : armed) {
      if (a.n() == n) {
        int index = a.oldOwner() ? move.getFrom() : move.getTo();
        sim.schedule("nemesis", a.delay(), () -> inject(a.kind(), index, a.lasts()));
      }
    }
  }

  /**
   * Draws one fault: what, to whom (the old or the new owner of a move), how long, and when: at a
   * time of the run (in the first 6 s), or (half of them) within 5 ms of the coordinator beginning
   * one of its first ten move attempts, so that it strikes while that move runs.
   */
  void planFault() {
    long at = SECOND / 5 + (long) (random.nextDouble() * 6 * SECOND);
    long lasts = SECOND / 5 + (long) (random.nextDouble() * 5 * SECOND);
    MoveFault kind = MoveFault.values()[random.nextInt(MoveFault.values().length)];
    boolean oldOwner = random.nextBoolean();
    int fallback = random.nextInt(3);
    boolean duringMove = random.nextBoolean();
    int n = 1 + random.nextInt(10);
    long delay = TimeUnit.MICROSECONDS.toNanos(random.nextInt(5000));
    String what = kind.name().toLowerCase(Locale.ROOT) + " of the " + (oldOwner ? "old" : "new");
    if (duringMove) {
      described.add(
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
    described.add(
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
    MoveProcess p = procs.get(index);
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
        sim.schedule("nemesis", LEASE_TTL + lasts, () -> restart.accept(p));
      }
      default -> {}
    }
  }

  private void pause(MoveProcess p, long lasts) {
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

  private void resume(MoveProcess p) {
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
            sim.schedule(p.node, SECOND / 5, () -> register.accept(p));
          });
    }
  }

  /** kill -9: the threads stop, the lease ends after its TTL, the disk stays. */
  private void crash(MoveProcess p) {
    p.crashed = true;
    sim.crash(p.node);
    p.pserver.crashKeepingDisk();
    if (p.pserver.lease() != null) {
      sim.schedule("nemesis", LEASE_TTL, () -> etcd.expire(p.pserver.lease()));
    }
  }

  /** Every fault ends: links heal, paused pservers resume, crashed ones restart. */
  void healAll() {
    links.healAll();
    for (MoveProcess p : List.copyOf(procs.values())) {
      if (p.paused) {
        resume(p);
      }
      if (p.crashed) {
        restart.accept(p);
      }
    }
  }
}
