package dev.paramserver.master.task;

import static org.assertj.core.api.Assertions.assertThat;

import dev.paramserver.proto.v1.JobState;
import dev.paramserver.proto.v1.JobStatus;
import dev.paramserver.proto.v1.MasterSnapshot;
import dev.paramserver.proto.v1.PassStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Leasing the next pass's tasks ahead (asynchronous trainers): a trainer that finds no task todo
 * while others still hold the pass's last tasks gets tasks of the next pass, and the pass
 * accounting stays as without it.
 */
class TaskQueueLeaseAheadTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final long[] RECORDS = {10, 20, 30, 40};

  private final MutableClock clock = new MutableClock(1_000_000);

  /** Four tasks, two passes; a holds 0-2 and finished them, b still holds 3. */
  private TaskQueue straggling(int passes) {
    TaskQueue q = new TaskQueue(RECORDS, passes, 3, clock);
    for (int i = 0; i < 3; i++) {
      assertThat(q.next("a", 0, TIMEOUT, true).taskId()).isEqualTo(i);
    }
    assertThat(q.next("b", 0, TIMEOUT, true).taskId()).isEqualTo(3);
    for (int i = 0; i < 3; i++) {
      assertThat(q.finished(i, 1).accepted()).isTrue();
    }
    return q;
  }

  @Test
  void asyncTrainer_getsNextPassTasks_whileThePassLastTaskIsPending() {
    TaskQueue q = straggling(2);
    assertThat(q.canDispatch(0, false)).as("synchronous: the pass barrier holds").isFalse();
    assertThat(q.next("a", 0, TIMEOUT, false).outcome()).isEqualTo(Dispatch.Outcome.WAIT);

    Dispatch d = q.next("a", 0, TIMEOUT, true);
    assertThat(d.outcome()).isEqualTo(Dispatch.Outcome.TASK);
    assertThat(d.taskPass()).as("the task is of the next pass").isEqualTo(1);
    assertThat(d.currentPass()).as("pass 0 still runs").isZero();
    assertThat(d.taskId()).isEqualTo(0);
    assertThat(d.epoch()).isEqualTo(2);
    assertThat(q.pass()).isZero();
    JobStatus s = q.status();
    assertThat(s.getTasks().getPending()).as("pass 0: only b's task").isOne();
    assertThat(s.getTasks().getDone()).isEqualTo(3);
    assertThat(s.getPassesCount()).isEqualTo(2);
    assertThat(s.getPasses(1).getTasks().getPending()).isOne();
    assertThat(s.getPasses(1).getTasks().getTodo()).isEqualTo(3);
    assertThat(s.getPasses(1).getEndedMs()).isZero();

    // b finishes the last task of pass 0: the pass ends, pass 1 is the current one
    assertThat(q.finished(3, 1).accepted()).isTrue();
    assertThat(q.pass()).isOne();
    PassStatus pass0 = q.status().getPasses(0);
    assertThat(pass0.getEndedMs()).isNotZero();
    assertThat(pass0.getRecords()).as("every task of pass 0 once").isEqualTo(100);
    assertThat(pass0.getTasks().getDone()).isEqualTo(4);
    assertThat(pass0.getTasks().getPending()).isZero();
    assertThat(q.next("b", 0, TIMEOUT, true).outcome()).isEqualTo(Dispatch.Outcome.PASS_FINISHED);
    assertThat(q.status().getTasks().getPending()).as("a's task leased ahead").isOne();
    assertThat(q.status().getTasks().getTodo()).isEqualTo(3);

    // the rest of pass 1, the last: nothing is leased past it
    Set<Integer> rest = new HashSet<>();
    for (int i = 0; i < 3; i++) {
      Dispatch r = q.next("b", 1, TIMEOUT, true);
      assertThat(r.taskPass()).isOne();
      rest.add(r.taskId());
      assertThat(q.finished(r.taskId(), r.epoch()).accepted()).isTrue();
    }
    assertThat(rest).containsExactlyInAnyOrder(1, 2, 3);
    assertThat(q.next("b", 1, TIMEOUT, true).outcome())
        .as("the last pass has no next pass to lease")
        .isEqualTo(Dispatch.Outcome.WAIT);
    assertThat(q.finished(0, 2).accepted()).isTrue();
    assertThat(q.state()).isEqualTo(JobState.FINISHED);
    assertThat(q.status().getPasses(1).getRecords()).isEqualTo(100);
    assertThat(q.status().getPasses(1).getTasks().getDone()).isEqualTo(4);
    assertThat(q.status().getPassesCount()).isEqualTo(2);
  }

  @Test
  void aStragglerThatFails_isRetriedInItsOwnPassFirst_thenMovesAhead() {
    TaskQueue q = straggling(3);
    Dispatch ahead = q.next("a", 0, TIMEOUT, true);
    assertThat(ahead.taskPass()).isOne();
    assertThat(q.failed(3, 1, "disk error", false).accepted()).isTrue();
    Dispatch retry = q.next("a", 0, TIMEOUT, true);
    assertThat(retry.taskId()).as("the failed task of pass 0 comes before pass 1's").isEqualTo(3);
    assertThat(retry.taskPass()).isZero();
    assertThat(q.finished(3, retry.epoch()).accepted()).isTrue();
    assertThat(q.pass()).isOne();
    assertThat(q.status().getPasses(0).getRecords()).isEqualTo(100);
    assertThat(q.status().getPasses(0).getTasks().getDone()).isEqualTo(4);
    assertThat(q.finished(0, ahead.epoch()).accepted())
        .as("the task leased ahead is reported in pass 1")
        .isTrue();
    assertThat(q.status().getPasses(1).getRecords()).isEqualTo(10);
  }

  @Test
  void aReportFromThePassBefore_isStaleOnceTheTaskMovedAhead() {
    TaskQueue q = straggling(2);
    Dispatch ahead = q.next("a", 0, TIMEOUT, true);
    assertThat(q.finished(0, 1).accepted()).as("pass 0's dispatch of task 0").isFalse();
    assertThat(q.failed(0, 1, "late", false).accepted()).isFalse();
    assertThat(q.finished(0, ahead.epoch()).accepted()).isTrue();
    assertThat(q.finished(0, ahead.epoch()).duplicate())
        .as("again: a duplicate of pass 1")
        .isTrue();
    assertThat(q.status().getPasses(1).getDuplicates()).isOne();
    assertThat(q.status().getPasses(0).getDuplicates()).isZero();
  }

  @Test
  void aLeaseAhead_survivesASnapshotRoundTrip() throws Exception {
    TaskQueue q = straggling(2);
    Dispatch ahead = q.next("a", 0, TIMEOUT, true);
    TaskQueue restored = TaskQueue.restore(q.snapshot(), RECORDS, 3, clock);
    TaskQueue decoded =
        TaskQueue.restore(MasterSnapshot.parseFrom(q.snapshotBytes()), RECORDS, 3, clock);
    for (TaskQueue r : List.of(restored, decoded)) {
      assertThat(r.status()).isEqualTo(q.status());
      assertThat(r.aheadOpen()).isTrue();
      // the restored queue goes on as the original would
      Dispatch next = r.next("c", 0, TIMEOUT, true);
      assertThat(next.taskPass()).isOne();
      assertThat(next.taskId()).isEqualTo(1);
      assertThat(r.finished(3, 1).accepted()).isTrue();
      assertThat(r.pass()).isOne();
      assertThat(r.finished(0, ahead.epoch()).accepted()).isTrue();
      assertThat(r.status().getTasks().getDone()).isOne();
      assertThat(r.status().getTasks().getPending()).isOne();
    }
  }

  @Test
  void aSlowTrainerEachPass_everyTaskIsTrainedOncePerPass_andTheJobEndsAfterItsPasses() {
    int passes = 3;
    long[] records = new long[40];
    Arrays.fill(records, 5);
    TaskQueue q = new TaskQueue(records, passes, 3, clock);
    // a slow trainer holds one task per pass to the end; a fast one trains everything else
    List<Dispatch> slow = new ArrayList<>();
    int[][] trained = new int[passes][records.length];
    for (int p = 0; p < passes; p++) {
      Dispatch s = q.next("slow", p, TIMEOUT, true);
      assertThat(s.outcome()).isEqualTo(Dispatch.Outcome.TASK);
      slow.add(s);
      Dispatch f;
      int asked = q.pass();
      while ((f = q.next("fast", asked, TIMEOUT, true)).outcome() == Dispatch.Outcome.TASK) {
        trained[f.taskPass()][f.taskId()]++;
        assertThat(q.finished(f.taskId(), f.epoch()).accepted()).isTrue();
      }
      assertThat(f.outcome()).isEqualTo(Dispatch.Outcome.WAIT);
      trained[s.taskPass()][s.taskId()]++;
      assertThat(q.finished(s.taskId(), s.epoch()).accepted()).isTrue();
    }
    for (int p = 0; p < passes; p++) {
      for (int id = 0; id < records.length; id++) {
        assertThat(trained[p][id]).as("task %d of pass %d", id, p).isOne();
      }
    }
    assertThat(q.state()).isEqualTo(JobState.FINISHED);
    JobStatus s = q.status();
    assertThat(s.getPassesCount()).isEqualTo(passes);
    for (PassStatus p : s.getPassesList()) {
      assertThat(p.getRecords()).isEqualTo(200);
      assertThat(p.getTasks().getDone()).isEqualTo(40);
      assertThat(p.getEndedMs()).isNotZero();
    }
  }
}
