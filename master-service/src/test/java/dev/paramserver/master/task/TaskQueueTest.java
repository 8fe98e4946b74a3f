package dev.paramserver.master.task;

import static dev.paramserver.master.task.Dispatch.Outcome.JOB_FAILED;
import static dev.paramserver.master.task.Dispatch.Outcome.JOB_FINISHED;
import static dev.paramserver.master.task.Dispatch.Outcome.PASS_FINISHED;
import static dev.paramserver.master.task.Dispatch.Outcome.PASS_NOT_STARTED;
import static dev.paramserver.master.task.Dispatch.Outcome.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.paramserver.errors.ErrorReason;
import dev.paramserver.errors.ServiceException;
import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.MasterSnapshot;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The queue semantics of docs/design.md §3, one row per transition. */
class TaskQueueTest {
  private static final Duration PAST_TIMEOUT = QueueScript.TIMEOUT.plusSeconds(1);

  /** name, records per task, passes, max failures, script. */
  static Stream<Arguments> transitions() {
    return Stream.of(
        row(
            "getTask hands out the head of todo with epoch+1, then WAIT while tasks are pending",
            new long[] {10, 20},
            1,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("b", 0)
                    .task(1, 1)
                    .counts(0, 2, 0, 0)
                    .get("c", 0)
                    .outcome(WAIT, 0)),
        row(
            "a stale epoch is ignored; the current dispatch is accepted",
            new long[] {10},
            1,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .advance(PAST_TIMEOUT)
                    .expire(1)
                    .get("b", 0)
                    .task(0, 2)
                    .finish(0, 1, false, false)
                    .fail(0, 1, false, false)
                    .counts(0, 1, 0, 0)
                    .finish(0, 2, true, false)
                    .job(JobState.FINISHED, 1)),
        row(
            "a finish of a task already done counts as a duplicate, records counted once",
            new long[] {10, 20},
            1,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .finish(0, 1, true, false)
                    .finish(0, 1, false, true)
                    .passAccounting(0, 10, 1, 0)
                    .counts(1, 0, 1, 0)),
        row(
            "a late finish of a timed-out dispatch after the re-dispatch finished is a duplicate",
            new long[] {10, 20},
            1,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .advance(PAST_TIMEOUT)
                    .expire(1)
                    .get("b", 0)
                    .task(1, 1)
                    .get("b", 0)
                    .task(0, 2)
                    .finish(0, 2, true, false)
                    .finish(0, 1, false, true)
                    .passAccounting(0, 10, 1, 1)),
        row(
            "a pass ends on a failure of its last task (over the cap)",
            new long[] {10, 20},
            2,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("b", 0)
                    .task(1, 1)
                    .finish(0, 1, true, false)
                    .fail(1, 1, false, true)
                    .job(JobState.RUNNING, 1)
                    .passCounts(0, 0, 0, 1, 1)
                    .counts(2, 0, 0, 0)),
        row(
            "a pass ends on a timeout of its last task",
            new long[] {10, 20},
            2,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("b", 0)
                    .task(1, 1)
                    .finish(0, 1, true, false)
                    .advance(PAST_TIMEOUT)
                    .expire(1)
                    .job(JobState.RUNNING, 1)
                    .passAccounting(0, 10, 0, 1)
                    .passCounts(0, 0, 0, 1, 1)),
        row(
            "a failed task goes back to the tail of todo until it reaches the failure cap",
            new long[] {10, 20},
            1,
            2,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .fail(0, 1, false, true)
                    .counts(2, 0, 0, 0)
                    .get("a", 0)
                    .task(1, 1)
                    .get("a", 0)
                    .task(0, 2)
                    .fail(0, 2, false, true)
                    .counts(0, 1, 0, 1)
                    .finish(1, 1, true, false)
                    .job(JobState.FINISHED, 1)
                    .passCounts(0, 0, 0, 1, 1)),
        row(
            "a timed-out task counts as a failure",
            new long[] {10, 20},
            1,
            1,
            s -> s.get("a", 0).task(0, 1).advance(PAST_TIMEOUT).expire(1).counts(1, 0, 0, 1)),
        row(
            "no timeout before the deadline",
            new long[] {10},
            1,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .advance(QueueScript.TIMEOUT.minusSeconds(1))
                    .expire(0)
                    .counts(0, 1, 0, 0)),
        row(
            "every task of a pass failed: the job FAILED with the reason, not a hang",
            new long[] {10, 20},
            2,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("a", 0)
                    .task(1, 1)
                    .fail(0, 1, false, true)
                    .job(JobState.RUNNING, 0)
                    .advance(PAST_TIMEOUT)
                    .expire(1)
                    .job(JobState.FAILED, 0)
                    .get("a", 0)
                    .outcome(JOB_FAILED, 0)
                    .reasonContains("every task of pass 0 failed")
                    .reasonContains("timed out")),
        row(
            "failure counts reset at each new pass",
            new long[] {10, 20},
            2,
            2,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .fail(0, 1, false, true)
                    .get("a", 0)
                    .task(1, 1)
                    .get("a", 0)
                    .task(0, 2)
                    .finish(0, 2, true, false)
                    .finish(1, 1, true, false)
                    .job(JobState.RUNNING, 1)
                    .get("a", 1)
                    .task(0, 3)
                    .fail(0, 3, false, true)
                    .counts(2, 0, 0, 0)),
        row(
            "the next pass re-queues every task, also the failed ones",
            new long[] {10, 20},
            2,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .fail(0, 1, false, true)
                    .get("a", 0)
                    .task(1, 1)
                    .finish(1, 1, true, false)
                    .job(JobState.RUNNING, 1)
                    .counts(2, 0, 0, 0)
                    .get("a", 1)
                    .task(0, 2)),
        row(
            "a task handed back returns to todo without counting a failure",
            new long[] {10},
            1,
            1,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .fail(0, 1, true, true)
                    .counts(1, 0, 0, 0)
                    .get("b", 0)
                    .task(0, 2)
                    .finish(0, 2, true, false)
                    .job(JobState.FINISHED, 1)),
        row(
            "a report on a task back in todo is stale",
            new long[] {10, 20},
            1,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .fail(0, 1, true, true)
                    .fail(0, 1, true, false)
                    .finish(0, 1, false, false)
                    .counts(2, 0, 0, 0)),
        row(
            "a trainer ahead gets PASS_NOT_STARTED, one behind PASS_FINISHED",
            new long[] {10},
            2,
            3,
            s ->
                s.get("a", 1)
                    .outcome(PASS_NOT_STARTED, 0)
                    .get("a", 0)
                    .task(0, 1)
                    .finish(0, 1, true, false)
                    .get("a", 0)
                    .outcome(PASS_FINISHED, 1)
                    .get("a", 1)
                    .task(0, 2)),
        row(
            "after the last pass the job is FINISHED and getTask says JOB_FINISHED",
            new long[] {10, 20},
            2,
            3,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("a", 0)
                    .task(1, 1)
                    .finish(0, 1, true, false)
                    .finish(1, 1, true, false)
                    .get("a", 1)
                    .task(0, 2)
                    .get("b", 1)
                    .task(1, 2)
                    .finish(1, 2, true, false)
                    .finish(0, 2, true, false)
                    .job(JobState.FINISHED, 2)
                    .get("a", 1)
                    .outcome(JOB_FINISHED, 2)
                    .get("a", 2)
                    .outcome(JOB_FINISHED, 2)
                    .passAccounting(0, 30, 0, 0)
                    .passAccounting(1, 30, 0, 0)),
        row(
            "evaluations: one per trainer per pass, the mean is reported",
            new long[] {10},
            1,
            3,
            s -> {
              s.get("a", 0).task(0, 1).finish(0, 1, true, false);
              s.evaluate("a", 0, 9.0, 0.1).evaluate("a", 0, 1.0, 0.5).evaluate("b", 0, 3.0, 0.7);
              assertThat(s.passStatus(0).getEvalReports()).isEqualTo(2);
              assertThat(s.passStatus(0).getEvalLoss()).isEqualTo(2.0);
              assertThat(s.passStatus(0).getEvalAccuracy()).isEqualTo(0.6);
            }),
        row(
            "pass accounting: trainers seen, start and end times",
            new long[] {10, 20},
            2,
            3,
            s -> {
              s.get("a", 0).task(0, 1).get("b", 0).task(1, 1).advance(Duration.ofSeconds(5));
              s.finish(0, 1, true, false).finish(1, 1, true, false);
              assertThat(s.passStatus(0).getTrainersList()).containsExactly("a", "b");
              assertThat(s.passStatus(0).getEndedMs() - s.passStatus(0).getStartedMs())
                  .isEqualTo(5000);
              assertThat(s.passStatus(1).getEndedMs()).isZero();
            }),
        row(
            "a snapshot restores todo order, pending deadlines and accounting (failover)",
            new long[] {10, 20, 30},
            2,
            2,
            s ->
                s.get("a", 0)
                    .task(0, 1)
                    .get("b", 0)
                    .task(1, 1)
                    .finish(0, 1, true, false)
                    .finish(0, 1, false, true)
                    .restoreFromSnapshot(2)
                    .counts(1, 1, 1, 0)
                    .passAccounting(0, 10, 1, 0)
                    .advance(PAST_TIMEOUT)
                    .expire(1)
                    .get("c", 0)
                    .task(2, 1)
                    .get("c", 0)
                    .task(1, 2)
                    .finish(1, 1, false, false)
                    .finish(1, 2, true, false)
                    .finish(2, 1, true, false)
                    .job(JobState.RUNNING, 1)
                    .passAccounting(0, 60, 1, 1)));
  }

  private static Arguments row(
      String name, long[] records, int passes, int maxFailures, Consumer<QueueScript> script) {
    return Arguments.of(name, records, passes, maxFailures, script);
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("transitions")
  void transition(
      String name, long[] records, int passes, int maxFailures, Consumer<QueueScript> script) {
    script.accept(new QueueScript(records, passes, maxFailures));
  }

  @ParameterizedTest(name = "report on task {0}")
  @MethodSource("unknownIds")
  void report_onUnknownTask_failsWithUnknownTask(long id) {
    QueueScript s = new QueueScript(new long[] {1, 2}, 1, 1);
    assertThatThrownBy(() -> s.queue.finished(id, 1))
        .isInstanceOf(ServiceException.class)
        .hasMessageContaining("task " + id + " does not exist")
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.UNKNOWN_TASK);
  }

  static Stream<Long> unknownIds() {
    return Stream.of(-1L, 2L, 1000L);
  }

  @ParameterizedTest(name = "evaluation of pass {0}")
  @MethodSource("futurePasses")
  void evaluation_ofPassNotStarted_isBadArgument(int pass) {
    QueueScript s = new QueueScript(new long[] {1}, 3, 1);
    assertThatThrownBy(() -> s.queue.reportEvaluation("a", pass, 1, 1, 0))
        .isInstanceOf(ServiceException.class)
        .extracting(e -> ((ServiceException) e).reason())
        .isEqualTo(ErrorReason.BAD_ARGUMENT);
  }

  static Stream<Integer> futurePasses() {
    return Stream.of(1, 2, -1);
  }

  @org.junit.jupiter.api.Test
  void snapshotBytes_parseToTheSameSnapshot() throws Exception {
    QueueScript s = new QueueScript(new long[] {5, 6, 7, 8}, 2, 2);
    assertThat(MasterSnapshot.parseFrom(s.queue.snapshotBytes())).isEqualTo(s.queue.snapshot());
    s.get("a", 0).task(0, 1).get("bé", 0).task(1, 1).finish(0, 1, true, false);
    s.fail(1, 1, false, true).get("c", 0).evaluate("a", 0, 1.5, 0.25);
    MasterSnapshot parsed = MasterSnapshot.parseFrom(s.queue.snapshotBytes());
    assertThat(parsed).isEqualTo(s.queue.snapshot());
    assertThat(parsed.getTasks().getHoldersList()).containsExactly("", "", "c", "");
    assertThat(parsed.getTasks().getTodoOrderList()).containsExactly(3, 1);
  }

  @org.junit.jupiter.api.Test
  void copy_isIndependentOfTheOriginal() {
    QueueScript s = new QueueScript(new long[] {1, 2}, 1, 1);
    TaskQueue copy = s.queue.copy();
    copy.next("a", 0, QueueScript.TIMEOUT);
    assertThat(copy.status().getTasks().getPending()).isEqualTo(1);
    assertThat(s.queue.status().getTasks().getPending()).isZero();
    assertThat(copy.version()).isGreaterThan(s.queue.version());
  }
}
