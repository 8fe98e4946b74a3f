package dev.paramserver.pserver.replication.harness;

import static dev.paramserver.pserver.replication.harness.Simulation.SECOND;

import dev.paramserver.proto.v1.PushGradientsRequest;
import dev.paramserver.pserver.replication.harness.SimulationHistory.Event;
import dev.paramserver.pserver.replication.harness.SimulationHistory.Outcome;
import dev.paramserver.pserver.shard.ParameterShard;
import dev.paramserver.pserver.shard.PushOutcome;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The trainers of a {@link Simulation}: each pushes its identified updates one after another to the
 * pserver that holds {@code ps/0}, with a deadline of its own, and retries a failed push with the
 * same identity (up to {@link #ATTEMPTS} attempts); a share of the answers is lost on the way back.
 * Every attempt and outcome goes to the run's history.
 */
final class SimulatedTrainers {
  private static final int ATTEMPTS = 6;

  /** Where a push goes: the scheduler's node of the pserver holding {@code ps/0}, and its shard. */
  record Target(String node, ParameterShard shard) {}

  private final SimulationScheduler sim;
  private final SimulationHistory history;
  private final Random random;
  private final SimulationSettings settings;
  private final Supplier<Optional<Target>> primary;
  private int done;

  SimulatedTrainers(
      SimulationScheduler sim,
      SimulationHistory history,
      Random random,
      SimulationSettings settings,
      Supplier<Optional<Target>> primary) {
    this.sim = sim;
    this.history = history;
    this.random = random;
    this.settings = settings;
    this.primary = primary;
  }

  /** Every trainer starts pushing shortly. */
  void start() {
    for (int t = 0; t < settings.trainers(); t++) {
      int trainer = t;
      sim.schedule("t" + t, SECOND / 10, () -> attempt(trainer, 1, 1));
    }
  }

  /** Whether every trainer is through its pushes. */
  boolean done() {
    return done == settings.trainers();
  }

  private void attempt(int trainer, int step, int attempt) {
    if (step > settings.pushes()) {
      done++;
      return;
    }
    String node = "t" + trainer;
    Optional<Target> target = primary.get();
    PushGradientsRequest push = history.push(trainer, step);
    if (target.isEmpty()) {
      history.record(event(trainer, step, attempt, Outcome.FAILED, "no primary in etcd"));
      retry(trainer, step, attempt);
      return;
    }
    Target to = target.get();
    history.record(event(trainer, step, attempt, Outcome.INVOKED, "to " + to.node()));
    boolean[] answered = {false};
    // the trainer's own deadline: a paused or cut-off primary answers too late or never
    sim.schedule(
        node,
        5 * SECOND,
        () -> {
          if (!answered[0]) {
            answered[0] = true;
            history.record(event(trainer, step, attempt, Outcome.FAILED, "no answer in 5 s"));
            retry(trainer, step, attempt);
          }
        });
    boolean answerLost = random.nextInt(100) < settings.faultPercent() / 2;
    sim.submit(
        to.node(),
        () -> {
          Outcome outcome;
          String detail;
          try {
            PushOutcome o = to.shard().pushOutcome(push);
            outcome = o.duplicate() ? Outcome.DUPLICATE : Outcome.ACKNOWLEDGED;
            detail = "by " + to.node();
          } catch (RuntimeException e) {
            outcome = Outcome.FAILED;
            detail = to.node() + ": " + e.getClass().getSimpleName();
          }
          Outcome seen = answerLost ? Outcome.ANSWER_LOST : outcome;
          String why = answerLost ? detail + " (" + outcome + ")" : detail;
          sim.schedule(
              node,
              TimeUnit.MICROSECONDS.toNanos(200),
              () -> {
                if (answered[0]) {
                  return;
                }
                answered[0] = true;
                history.record(event(trainer, step, attempt, seen, why));
                if (seen == Outcome.ACKNOWLEDGED || seen == Outcome.DUPLICATE) {
                  sim.schedule(node, SECOND / 20, () -> attempt(trainer, step + 1, 1));
                } else {
                  retry(trainer, step, attempt);
                }
              });
        });
  }

  private void retry(int trainer, int step, int attempt) {
    String node = "t" + trainer;
    if (attempt >= ATTEMPTS) {
      history.record(event(trainer, step, attempt, Outcome.GAVE_UP, ""));
      sim.schedule(node, SECOND / 20, () -> attempt(trainer, step + 1, 1));
    } else {
      sim.schedule(node, SECOND / 2 * attempt, () -> attempt(trainer, step, attempt + 1));
    }
  }

  private Event event(int trainer, int step, int attempt, Outcome outcome, String detail) {
    return new Event(sim.now(), trainer, step, attempt, outcome, detail);
  }
}
