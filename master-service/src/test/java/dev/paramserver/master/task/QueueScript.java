package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.PassStatus;
import dev.paramserver.proto.v1.TaskCounts;
import java.time.Duration;

/** A fluent script of calls on a {@link TaskQueue}, each followed by what it must lead to. */
final class QueueScript {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  final MutableClock clock = new MutableClock(1_000_000);
  TaskQueue queue;
  private Dispatch last;

  QueueScript(long[] taskRecords, int passes, int maxFailures) {
    queue = new TaskQueue(taskRecords, passes, maxFailures, clock);
  }

  QueueScript get(String trainer, int pass) {
    last = queue.next(trainer, pass, TIMEOUT);
    return this;
  }

  QueueScript task(int id, long epoch) {
    assertThat(last.outcome()).as("outcome of %s", last).isEqualTo(Dispatch.Outcome.TASK);
    assertThat(last.taskId()).as("task id").isEqualTo(id);
    assertThat(last.epoch()).as("epoch").isEqualTo(epoch);
    return this;
  }

  QueueScript outcome(Dispatch.Outcome outcome, int currentPass) {
    assertThat(last.outcome()).as("outcome of %s", last).isEqualTo(outcome);
    assertThat(last.currentPass()).as("current pass").isEqualTo(currentPass);
    return this;
  }

  QueueScript reasonContains(String text) {
    assertThat(last.reason()).contains(text);
    return this;
  }

  QueueScript finish(int id, long epoch, boolean accepted, boolean duplicate) {
    ReportOutcome r = queue.finished(id, epoch);
    assertThat(r.accepted()).as("finish(%d, %d) accepted", id, epoch).isEqualTo(accepted);
    assertThat(r.duplicate()).as("finish(%d, %d) duplicate", id, epoch).isEqualTo(duplicate);
    return this;
  }

  QueueScript fail(int id, long epoch, boolean handedBack, boolean accepted) {
    ReportOutcome r = queue.failed(id, epoch, "boom", handedBack);
    assertThat(r.accepted()).as("fail(%d, %d) accepted", id, epoch).isEqualTo(accepted);
    return this;
  }

  QueueScript advance(Duration d) {
    clock.advance(d);
    return this;
  }

  QueueScript expire(int expected) {
    assertThat(queue.expireOverdue()).as("tasks expired").isEqualTo(expected);
    return this;
  }

  QueueScript evaluate(String trainer, int pass, double loss, double accuracy) {
    queue.reportEvaluation(trainer, pass, loss, accuracy, Double.NaN);
    return this;
  }

  QueueScript job(JobState state, int pass) {
    assertThat(queue.state()).as("job state").isEqualTo(state);
    assertThat(queue.pass()).as("job pass").isEqualTo(pass);
    return this;
  }

  QueueScript counts(int todo, int pending, int done, int failed) {
    assertThat(queue.status().getTasks())
        .as("task counts")
        .isEqualTo(
            TaskCounts.newBuilder()
                .setTodo(todo)
                .setPending(pending)
                .setDone(done)
                .setFailed(failed)
                .build());
    return this;
  }

  PassStatus passStatus(int pass) {
    return queue.status().getPasses(pass);
  }

  QueueScript passCounts(int pass, int todo, int pending, int done, int failed) {
    assertThat(passStatus(pass).getTasks())
        .as("counts of pass %d", pass)
        .isEqualTo(
            TaskCounts.newBuilder()
                .setTodo(todo)
                .setPending(pending)
                .setDone(done)
                .setFailed(failed)
                .build());
    return this;
  }

  QueueScript passAccounting(int pass, long records, int duplicates, int timeouts) {
    PassStatus p = passStatus(pass);
    assertThat(p.getRecords()).as("records of pass %d", pass).isEqualTo(records);
    assertThat(p.getDuplicates()).as("duplicates of pass %d", pass).isEqualTo(duplicates);
    assertThat(p.getTimeouts()).as("timeouts of pass %d", pass).isEqualTo(timeouts);
    return this;
  }

  /** Replaces the queue by one restored from its own snapshot (a failover). */
  QueueScript restoreFromSnapshot(int maxFailures) {
    queue = TaskQueue.restore(queue.snapshot(), queue.taskRecords.clone(), maxFailures, clock);
    return this;
  }
}
