package dev.paramserver.pserver.replication.harness;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.etcd.PlacementStore;
import dev.paramserver.pserver.replication.harness.MoveHistory.Event;
import dev.paramserver.pserver.replication.harness.MoveHistory.Outcome;
import dev.paramserver.pserver.shard.PushOutcome;
import dev.paramserver.tensor.SlotMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;

/**
 * The move simulation's trainers, as docs/explanation/elastic.md ("Trainers") says a trainer
 * follows a scaling, reduced to pushes: each pushes its steps one after the other (a batch of 10 to
 * 40 ms apart; its first steps, then on while the placement changes), each step split by the
 * committed map (read from etcd again once a second: a watch that lags, so that requests planned by
 * a stale map meet MOVED) into one piece per owner, sent to the pserver holding that index in etcd
 * (it calls its shard's {@code pushOutcome} on that process's threads, as the replication
 * simulation's trainers do: no gRPC between trainer and pserver). A piece refused with MOVED waits
 * until the map reaches the epoch named or that move is rolled back (reading etcd every half
 * second, at most {@value #MOVED_WAIT_SECONDS} s), is cut by that map ({@link MovePiece#resplit}:
 * origin, a part of its own, {@code resent_from}) and its pieces are sent to their owners; a piece
 * that failed or whose answer was lost (or did not come within 5 s) is sent again as it is to the
 * same index, up to {@value #ATTEMPTS} times. A push is acknowledged once every piece of it was.
 */
final class MoveTrainers {
  private static final int ATTEMPTS = 8;
  private static final int MOVED_WAIT_SECONDS = 10;
  private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

  /** A pserver process the trainers can reach: its node (threads) and its shard. */
  record Target(String node, MovePserver pserver) {}

  private final SimulationScheduler sim;
  private final MoveHistory history;
  private final PlacementStore store;
  private final SlotMap initial;
  private final MoveLinks links;
  private final IntFunction<Optional<Target>> serving;
  private final Random random;
  private final int trainers;
  private final int pushes;
  private final int maxPushes;
  private final BooleanSupplier moving;
  private final int answerLostPercent;
  private final int[] parts;
  // each trainer's map and when it read it: a watch that lags, so maps go stale and MOVED comes
  private final SlotMap[] maps;
  private final long[] readAt;
  private int done;

  /**
   * @param serving the live process holding {@code ps/<index>}, if any
   * @param moving whether the placement is still changing: trainers push on while it is
   * @param answerLostPercent the share of answers lost on the way back
   */
  MoveTrainers(
      SimulationScheduler sim,
      MoveHistory history,
      PlacementStore store,
      SlotMap initial,
      MoveLinks links,
      IntFunction<Optional<Target>> serving,
      long seed,
      BooleanSupplier moving,
      MoveSettings settings) {
    this.sim = sim;
    this.history = history;
    this.store = store;
    this.initial = initial;
    this.links = links;
    this.serving = serving;
    this.random = new Random(seed);
    this.trainers = settings.trainers();
    this.pushes = settings.pushes();
    this.maxPushes = settings.maxPushes();
    this.moving = moving;
    this.answerLostPercent = settings.faultPercent() / 2;
    this.parts = new int[trainers];
    this.maps = new SlotMap[trainers];
    this.readAt = new long[trainers];
  }

  /** Starts every trainer after {@code delay}. */
  void start(long delay) {
    for (int t = 0; t < trainers; t++) {
      int trainer = t;
      sim.schedule(node(t), delay, () -> step(trainer, 1));
    }
  }

  /** Whether every trainer pushed every step (acknowledged or given up). */
  boolean done() {
    return done == trainers;
  }

  private static String node(int trainer) {
    return "t" + trainer;
  }

  /** One step of a trainer: its pieces, and what is left of them. */
  private final class Step {
    final int trainer;
    final int step;
    int left;
    boolean gaveUp;

    Step(int trainer, int step) {
      this.trainer = trainer;
      this.step = step;
    }

    void record(Outcome o, String detail) {
      history.record(new Event(sim.now(), trainer, step, o, detail));
    }

    /** A piece is over (acknowledged, or given up): the step ends with its last piece. */
    void pieceOver() {
      if (--left > 0) {
        return;
      }
      if (!gaveUp) {
        record(Outcome.PUSH_ACKNOWLEDGED, "");
      }
      // a batch of 10 to 40 ms between pushes
      long batch = TimeUnit.MILLISECONDS.toNanos(10 + random.nextInt(31));
      sim.schedule(node(trainer), batch, () -> step(trainer, step + 1));
    }
  }

  private void step(int trainer, int step) {
    if (step > maxPushes || (step > pushes && !moving.getAsBoolean())) {
      done++;
      return;
    }
    Step s = new Step(trainer, step);
    if (maps[trainer] == null || sim.now() - readAt[trainer] >= SECOND) {
      maps[trainer] = store.read().slotMap(initial);
      readAt[trainer] = sim.now();
    }
    SlotMap map = maps[trainer];
    Map<Integer, MovePiece> pieces = history.push(trainer, step).split(map);
    s.left = pieces.size();
    pieces.forEach((server, p) -> send(s, server, p, 1));
  }

  private void send(Step s, int server, MovePiece p, int attempt) {
    Optional<Target> target = serving.apply(server);
    String to = "to ps/" + server + " " + p;
    if (target.isEmpty()) {
      s.record(Outcome.FAILED, to + ": nobody holds ps/" + server);
      retry(s, server, p, attempt);
      return;
    }
    Target t = target.get();
    s.record(Outcome.INVOKED, to + " at " + t.node() + " #" + attempt);
    boolean[] answered = {false};
    // the trainer's own deadline: a paused, cut-off or crashed pserver answers late or never
    sim.schedule(
        node(s.trainer),
        5 * SECOND,
        () -> {
          if (!answered[0]) {
            answered[0] = true;
            s.record(Outcome.FAILED, to + ": no answer in 5 s");
            retry(s, server, p, attempt);
          }
        });
    if (!links.passes(node(s.trainer), t.node())) {
      return;
    }
    boolean lost = random.nextInt(100) < answerLostPercent;
    sim.submit(
        t.node(),
        () -> {
          Outcome outcome;
          String detail = to + " by " + t.node();
          long epoch = -1;
          try {
            PushOutcome o = t.pserver().shard.pushOutcome(p.request(s.trainer));
            outcome = o.duplicate() ? Outcome.DUPLICATE : Outcome.ACKNOWLEDGED;
          } catch (ServiceException e) {
            if (e.reason() == ErrorReason.MOVED) {
              outcome = Outcome.MOVED;
              epoch = Long.parseLong(e.metadata().get("epoch"));
              detail += ": owner " + e.metadata().get("owner") + " at epoch " + epoch;
            } else {
              outcome = Outcome.FAILED;
              detail += ": " + e.reason();
            }
          } catch (RuntimeException e) {
            outcome = Outcome.FAILED;
            detail += ": " + e.getClass().getSimpleName();
          }
          Outcome seen =
              lost || !links.answers(node(s.trainer), t.node()) ? Outcome.ANSWER_LOST : outcome;
          String why = seen == outcome ? detail : detail + " (" + outcome + ")";
          long movedAt = epoch;
          sim.schedule(
              node(s.trainer),
              TimeUnit.MICROSECONDS.toNanos(200),
              () -> {
                if (answered[0]) {
                  return;
                }
                answered[0] = true;
                s.record(seen, why);
                switch (seen) {
                  case ACKNOWLEDGED, DUPLICATE -> s.pieceOver();
                  case MOVED -> awaitEpoch(s, server, p, movedAt, sim.now(), attempt);
                  default -> retry(s, server, p, attempt);
                }
              });
        });
  }

  private void retry(Step s, int server, MovePiece p, int attempt) {
    if (attempt >= ATTEMPTS) {
      s.record(Outcome.GAVE_UP, "ps/" + server + " " + p);
      s.gaveUp = true;
      s.pieceOver();
      return;
    }
    sim.schedule(node(s.trainer), SECOND / 2 * attempt, () -> send(s, server, p, attempt + 1));
  }

  /**
   * Waits until the committed map reaches {@code epoch} or that move is gone (rolled back), at most
   * {@value #MOVED_WAIT_SECONDS} s, then resends the refused piece's pieces by the map.
   */
  private void awaitEpoch(Step s, int server, MovePiece p, long epoch, long since, int attempt) {
    PlacementStore.Read read = store.read();
    boolean moving = read.move().map(m -> m.getEpoch() == epoch).orElse(false);
    if (read.epoch() < epoch && moving && sim.now() - since < MOVED_WAIT_SECONDS * SECOND) {
      sim.schedule(
          node(s.trainer), SECOND / 2, () -> awaitEpoch(s, server, p, epoch, since, attempt));
      return;
    }
    Map<Integer, MovePiece> pieces =
        p.resplit(server, read.slotMap(initial), () -> 32768 + parts[s.trainer]++ % 32768);
    s.left += pieces.size() - 1;
    // a piece refused again counts towards the attempts of the one it was cut from
    pieces.forEach((owner, q) -> send(s, owner, q, attempt + 1));
  }
}
