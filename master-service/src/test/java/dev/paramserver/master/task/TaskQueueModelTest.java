package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.InvalidProtocolBufferException;
import dev.paramserver.master.task.QueueModel.St;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.statistics.Statistics;

/**
 * Model-based test of {@link TaskQueue}: random sequences of GetTask, TaskFinished, TaskFailed
 * (also handed back), timeouts, stale and duplicate reports and leader changes (snapshot, encode,
 * parse and restore into a fresh queue, as a new leader does) run against the queue and against
 * {@link QueueModel}; after every step the two must agree on every task's state, epoch and
 * failures, the todo order, the job's state and pass and every pass's accounting.
 */
class TaskQueueModelTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);

  /** One step of a trainer population or of the master. */
  sealed interface Action {}

  /** A trainer asks for a task of the current pass, an earlier one or a later one. */
  record Get(int trainer, int passOffset) implements Action {}

  /** A trainer reports the k-th latest dispatch handed out (modulo), or a made-up epoch. */
  record Finish(int dispatch, EpochPick pick) implements Action {}

  /** A trainer reports the k-th latest dispatch failed, or hands it back. */
  record Fail(int dispatch, EpochPick pick, boolean handedBack) implements Action {}

  /** Time passes, then the timeout checker runs. */
  record Tick(long millis) implements Action {}

  /** The leader changes: the queue is snapshotted and restored into a fresh queue. */
  record LeaderChange() implements Action {}

  /** Which epoch a report carries relative to the dispatch it names. */
  enum EpochPick {
    AS_DISPATCHED,
    ONE_BEFORE,
    ONE_AFTER,
    ZERO,
    LATEST_OF_TASK
  }

  // a jqwik property, outside JUnit Jupiter's default timeout: its run time is bounded by the tries
  // and by BOUNDED shrinking (which gives up shrinking a failure after 10 s)
  @Property(tries = 200, shrinking = ShrinkingMode.BOUNDED)
  void queueAgreesWithTheModel(
      @ForAll @Size(min = 1, max = 4) List<@LongRange(min = 1, max = 50) Long> records,
      @ForAll @IntRange(min = 1, max = 3) int passes,
      @ForAll @IntRange(min = 1, max = 3) int maxFailures,
      @ForAll("actions") List<Action> actions) {
    Run run = new Run(records.stream().mapToLong(Long::longValue).toArray(), passes, maxFailures);
    run.play(actions);
    Statistics.label("end state").collect(run.model.state);
    Statistics.label("passes started").collect(run.model.ledgers.size());
    Statistics.label("leader changes").collect(run.leaderChanges > 0);
    Statistics.label("duplicates")
        .collect(run.model.ledgers.stream().anyMatch(l -> l.duplicates > 0));
  }

  @Provide
  Arbitrary<List<Action>> actions() {
    Arbitrary<EpochPick> pick =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(6, Arbitraries.just(EpochPick.AS_DISPATCHED)),
            net.jqwik.api.Tuple.of(1, Arbitraries.just(EpochPick.ONE_BEFORE)),
            net.jqwik.api.Tuple.of(1, Arbitraries.just(EpochPick.ONE_AFTER)),
            net.jqwik.api.Tuple.of(1, Arbitraries.just(EpochPick.ZERO)),
            net.jqwik.api.Tuple.of(2, Arbitraries.just(EpochPick.LATEST_OF_TASK)));
    // counted back from the latest dispatch: mostly a trainer's current task, sometimes an old one
    Arbitrary<Integer> dispatch =
        Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(0, 2)),
            net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 60)));
    Arbitrary<Action> get =
        Combinators.combine(
                Arbitraries.integers().between(0, 2),
                Arbitraries.frequencyOf(
                    net.jqwik.api.Tuple.of(8, Arbitraries.just(0)),
                    net.jqwik.api.Tuple.of(1, Arbitraries.just(-1)),
                    net.jqwik.api.Tuple.of(1, Arbitraries.just(1))))
            .as(Get::new);
    Arbitrary<Action> finish = Combinators.combine(dispatch, pick).as(Finish::new);
    Arbitrary<Action> fail =
        Combinators.combine(dispatch, pick, Arbitraries.of(true, false)).as(Fail::new);
    Arbitrary<Action> tick =
        Arbitraries.of(1_000L, 30_000L, 59_999L, 60_000L, 61_000L, 120_000L).map(Tick::new);
    Arbitrary<Action> leader = Arbitraries.just(new LeaderChange());
    return Arbitraries.frequencyOf(
            net.jqwik.api.Tuple.of(8, get),
            net.jqwik.api.Tuple.of(6, finish),
            net.jqwik.api.Tuple.of(3, fail),
            net.jqwik.api.Tuple.of(2, tick),
            net.jqwik.api.Tuple.of(1, leader))
        .list()
        .ofMinSize(5)
        .ofMaxSize(60);
  }

  /** One run of a sequence against the queue and the model. */
  private static final class Run {
    final MutableClock clock = new MutableClock(1_000_000);
    final long[] records;
    final int maxFailures;
    final QueueModel model;
    TaskQueue queue;
    final List<long[]> dispatches = new ArrayList<>(); // (task id, epoch) handed out
    long[] lastEpochs;
    int step;
    int leaderChanges;

    Run(long[] records, int passes, int maxFailures) {
      this.records = records;
      this.maxFailures = maxFailures;
      this.queue = new TaskQueue(records.clone(), passes, maxFailures, clock);
      this.model = new QueueModel(records, passes, maxFailures, TIMEOUT.toMillis());
      this.lastEpochs = new long[records.length];
      check("start");
    }

    void play(List<Action> actions) {
      for (Action a : actions) {
        step++;
        apply(a);
        check(a.toString());
      }
    }

    private void apply(Action a) {
      if (a instanceof Get g) {
        get(g);
      } else if (a instanceof Finish f) {
        finish(f);
      } else if (a instanceof Fail f) {
        fail(f);
      } else if (a instanceof Tick t) {
        tick(t);
      } else {
        leaderChange();
      }
    }

    private void get(Get g) {
      int requested = Math.max(0, queue.pass() + g.passOffset());
      long before = queue.version();
      Dispatch d = queue.next("trainer-" + g.trainer(), requested, TIMEOUT);
      Integer head = model.todo.peekFirst();
      Dispatch.Outcome expected = model.next(requested, clock.millis());
      assertThat(d.outcome()).as(at("GetTask(pass %d) outcome", requested)).isEqualTo(expected);
      assertThat(d.currentPass()).as(at("current pass in the answer")).isEqualTo(model.pass);
      if (expected == Dispatch.Outcome.TASK) {
        assertThat(d.taskId()).as(at("task handed out (head of todo)")).isEqualTo(head);
        assertThat(d.epoch()).as(at("epoch of the dispatch")).isEqualTo(model.epoch[head]);
        assertThat(queue.version()).as(at("version after a dispatch")).isGreaterThan(before);
        dispatches.add(new long[] {d.taskId(), d.epoch()});
      } else {
        assertThat(queue.version())
            .as(at("version after a GetTask without task"))
            .isEqualTo(before);
      }
      if (expected == Dispatch.Outcome.JOB_FAILED) {
        assertThat(d.reason()).as(at("reason of a failed job")).isNotBlank();
      }
    }

    private long[] report(int k, EpochPick pick) {
      if (dispatches.isEmpty()) {
        int id = k % records.length;
        return new long[] {id, pick == EpochPick.ZERO ? 0 : 1};
      }
      long[] d = dispatches.get(dispatches.size() - 1 - k % dispatches.size());
      int id = (int) d[0];
      long epoch =
          switch (pick) {
            case AS_DISPATCHED -> d[1];
            case ONE_BEFORE -> d[1] - 1;
            case ONE_AFTER -> d[1] + 1;
            case ZERO -> 0;
            case LATEST_OF_TASK -> model.epoch[id];
          };
      return new long[] {id, epoch};
    }

    private void finish(Finish f) {
      long[] r = report(f.dispatch(), f.pick());
      int id = (int) r[0];
      byte[] before = queue.snapshotBytes();
      long version = queue.version();
      ReportOutcome got = queue.finished(id, r[1]);
      String expected = model.finished(id, r[1]);
      String label = String.format("TaskFinished(task %d, epoch %d)", id, r[1]);
      assertThat(got.accepted()).as(at(label + " accepted")).isEqualTo(expected.equals("accepted"));
      assertThat(got.duplicate())
          .as(at(label + " counted as duplicate"))
          .isEqualTo(expected.equals("duplicate"));
      if (expected.equals("stale")) {
        assertUnchanged(label, before, version);
      } else {
        assertThat(queue.version()).as(at(label + " version")).isGreaterThan(version);
      }
    }

    private void fail(Fail f) {
      long[] r = report(f.dispatch(), f.pick());
      int id = (int) r[0];
      byte[] before = queue.snapshotBytes();
      long version = queue.version();
      ReportOutcome got = queue.failed(id, r[1], "boom", f.handedBack());
      boolean expected = model.failed(id, r[1], f.handedBack());
      String label =
          String.format("TaskFailed(task %d, epoch %d, handedBack %s)", id, r[1], f.handedBack());
      assertThat(got.accepted()).as(at(label + " accepted")).isEqualTo(expected);
      assertThat(got.duplicate()).as(at(label + " duplicate")).isFalse();
      if (!expected) {
        assertUnchanged(label, before, version);
      } else {
        assertThat(queue.version()).as(at(label + " version")).isGreaterThan(version);
      }
    }

    private void tick(Tick t) {
      clock.advance(Duration.ofMillis(t.millis()));
      boolean overdue = queue.hasOverdue();
      int expired = queue.expireOverdue();
      int expected = model.expire(clock.millis());
      assertThat(expired).as(at("tasks expired after %d ms", t.millis())).isEqualTo(expected);
      assertThat(overdue).as(at("hasOverdue before the expiry")).isEqualTo(expected > 0);
      assertThat(queue.hasOverdue()).as(at("hasOverdue after the expiry")).isFalse();
    }

    private void leaderChange() {
      MasterSnapshot viaBuilder = queue.snapshot();
      MasterSnapshot parsed;
      try {
        parsed = MasterSnapshot.parseFrom(queue.snapshotBytes());
      } catch (InvalidProtocolBufferException e) {
        throw new AssertionError(at("the encoded snapshot does not parse"), e);
      }
      assertThat(parsed).as(at("encoded snapshot equals the built one")).isEqualTo(viaBuilder);
      leaderChanges++;
      JobStatus statusBefore = queue.status();
      queue = TaskQueue.restore(parsed, records.clone(), maxFailures, clock);
      assertThat(queue.status()).as(at("status after the restore")).isEqualTo(statusBefore);
    }

    private void assertUnchanged(String label, byte[] before, long version) {
      assertThat(queue.version()).as(at(label + " is stale: version")).isEqualTo(version);
      assertThat(queue.snapshotBytes())
          .as(at(label + " is stale: the whole queue is unchanged"))
          .isEqualTo(before);
    }

    private void check(String after) {
      int n = records.length;
      String where = "after step " + step + " " + after;
      assertThat(queue.state()).as(where + ": job state").isEqualTo(model.state);
      assertThat(queue.pass()).as(where + ": pass").isEqualTo(model.pass);
      for (int i = 0; i < n; i++) {
        assertThat(stateOf(queue.states[i]))
            .as(where + ": state of task " + i)
            .isEqualTo(model.st[i]);
        assertThat(queue.epochs[i]).as(where + ": epoch of task " + i).isEqualTo(model.epoch[i]);
        assertThat(queue.epochs[i])
            .as(where + ": epochs only grow (task " + i + ")")
            .isGreaterThanOrEqualTo(lastEpochs[i]);
        assertThat(queue.failures[i])
            .as(where + ": failures of task " + i + " in this pass")
            .isEqualTo(model.failures[i]);
        if (model.st[i] == St.FAILED) {
          assertThat(queue.failures[i])
              .as(where + ": failed task at the cap")
              .isEqualTo(maxFailures);
        } else {
          assertThat(queue.failures[i])
              .as(where + ": failures below the cap")
              .isLessThan(maxFailures);
        }
        assertThat(queue.finishes[i])
            .as(where + ": finishes of task " + i + " in this pass")
            .isEqualTo(model.finishes[i]);
      }
      lastEpochs = queue.epochs.clone();
      assertThat(queue.todo.toArray())
          .as(where + ": todo order")
          .containsExactly(model.todo.stream().mapToInt(Integer::intValue).toArray());

      JobStatus status = queue.status();
      TaskCounts c = status.getTasks();
      assertThat(c.getTodo() + c.getPending() + c.getDone() + c.getFailed())
          .as(where + ": no task lost (todo+pending+done+failed)")
          .isEqualTo(n);
      int[] expectedCounts =
          model.state == JobState.RUNNING ? model.counts() : model.ledger().finalCounts;
      assertThat(new int[] {c.getTodo(), c.getPending(), c.getDone(), c.getFailed()})
          .as(where + ": task counts in the status")
          .containsExactly(expectedCounts);
      if (model.state == JobState.RUNNING) {
        assertThat(c.getTodo() + c.getPending())
            .as(where + ": a running pass has a task todo or pending")
            .isPositive();
      }
      if (model.state == JobState.FAILED) {
        assertThat(status.getFailureReason()).as(where + ": failure reason").isNotBlank();
        assertThat(c.getDone()).as(where + ": a job fails only when no task was done").isZero();
      }
      assertThat(status.getPassesCount())
          .as(where + ": passes in the history")
          .isEqualTo(model.ledgers.size());
      for (int p = 0; p < model.ledgers.size(); p++) {
        QueueModel.Ledger l = model.ledgers.get(p);
        PassStatus ps = status.getPasses(p);
        assertThat(ps.getPass()).as(where + ": pass number").isEqualTo(p);
        assertThat(ps.getRecords()).as(where + ": records of pass " + p).isEqualTo(l.records);
        assertThat(ps.getDuplicates())
            .as(where + ": duplicates of pass " + p)
            .isEqualTo(l.duplicates);
        assertThat(ps.getTimeouts()).as(where + ": timeouts of pass " + p).isEqualTo(l.timeouts);
        if (l.finalCounts != null) {
          assertThat(ps.getTasks().getDone())
              .as(where + ": done in pass " + p)
              .isEqualTo(l.finalCounts[2]);
          assertThat(ps.getTasks().getFailed())
              .as(where + ": failed in pass " + p)
              .isEqualTo(l.finalCounts[3]);
          assertThat(ps.getEndedMs()).as(where + ": pass " + p + " has an end").isPositive();
        }
      }
      assertThat(Arrays.stream(model.counts()).sum()).isEqualTo(n);
    }

    private String at(String what, Object... args) {
      return "step " + step + ": " + String.format(what, args);
    }

    private static St stateOf(byte b) {
      return switch (b) {
        case TaskQueue.TODO -> St.TODO;
        case TaskQueue.PENDING -> St.PENDING;
        case TaskQueue.DONE -> St.DONE;
        case TaskQueue.FAILED -> St.FAILED;
        default -> throw new AssertionError("task in unknown state " + b);
      };
    }
  }
}
